//! `ssd`: a NAND-flash SSD — channels of dies of planes behind a host link, with page reads,
//! page programs, a steady-state write-amplification charge and an optional write cache.
//!
//! # The model
//!
//! The flash array has `channels` channels; each is a bus of `channel_rate` bytes per second
//! shared by the `dies` dies on it, and each die has `planes` planes of `page_size` pages. The
//! controller talks to the host over one link of `host_rate` bytes per second (SATA, or the
//! PCIe lanes of an NVMe drive) and holds up to `queues × depth` commands (NCQ tags, NVMe
//! queue slots), all in progress at once and competing for dies, channels and the link.
//!
//! A command first spends `command_time` in the controller (command decoding, mapping; MQSim's
//! SATA processing delay). This is a latency, not a server: many commands spend it at once.
//! The command is then cut into *transactions*, one per die it touches: the pages of the
//! command that sit on that die in different planes form one multi-plane operation.
//!
//! * **Read transaction:** the die senses its pages in `read_time` (one sense for all planes),
//!   then shifts the requested bytes out over its channel (bytes / `channel_rate`), then the
//!   link carries them to the host (bytes / `host_rate`). The die is held from the start of the
//!   sense until its data has left over the channel: the data sits in the die's page register
//!   until then, so a die cannot start its next read earlier (this is what makes one die of
//!   Agrawal et al. read at 1/(25 µs + 100 µs), devices.md §2.3).
//! * **Write transaction:** the link brings the bytes from the host, the die is taken, the
//!   channel loads them into the die's page register, and the die programs for `program_time`
//!   (plus the write-amplification charge below) and is then released.
//!
//! A command finishes when its last transaction does. Every resource — each die, each channel,
//! the link — serves its waiters first in, first out, in the order they became ready; internal
//! steps are events ordered by (time, sequence), so equal times resolve in a fixed order and a
//! run is reproducible. The link is one resource for both directions (SATA is half duplex; a
//! PCIe link is not, see the simplifications).
//!
//! Only the sectors a command names cross the channel and the link: NAND can shift out part
//! of its page register, and a 4 KiB read of an 8 KiB page moves 4 KiB. This is what makes
//! 4 KiB random reads on the MQSim device bus-bound at C·B/4 KiB ≈ 650 k IOPS (devices.md §2.4).
//! A partial-page write still programs a whole page.
//!
//! # Sequential bandwidth
//!
//! Large sequential reads (whole stripes, several in flight) run at the least of the host link
//! (`host_rate`), the channels (`channels × channel_rate`) and the dies (`channels × dies`
//! dies, each sensing `planes` pages in `read_time` and shifting them over its channel), within
//! 5 %: the first sense and the last transfer are not overlapped, and every resource is served
//! in arrival order rather than by a perfect pipeline (`tests/device_conformance.rs` checks
//! every preset).
//!
//! # Mapping
//!
//! Location `n` (a page number) lives on die `n mod (C·D)`, whose channel is `die mod C` and
//! whose position on that channel is `die / C`, in plane `(n / (C·D)) mod P`: consecutive pages
//! go to consecutive channels first, then to the next die of each channel, then to the next
//! plane (MQSim's CWDP order with chips and dies folded into `dies`). Reads use the logical
//! page number as `n` (static striping); writes use a write pointer that advances one location
//! per page written, as a page-mapping FTL that appends to the next die in turn would. Both are
//! arithmetic: there is no per-page table, so memory does not grow with the simulated data.
//! Reads do not follow where the data was last written.
//!
//! Pages of one command that share a die and a *stripe* (C·D·P consecutive locations) lie in
//! different planes and form one multi-plane operation: one `read_time` or one program for all
//! of them. Pages of different commands are never combined.
//!
//! # Write amplification
//!
//! With `gc=0` the drive is fresh: every write lands on an erased page and WA is 1. With `gc=1`
//! it is in steady state under uniform random writes: WA is `write_amplification` if given,
//! else (1 + `op`) / (2·`op`), the greedy-GC approximation of devices.md §2.4 (7.6 at op 0.07,
//! 2.5 at op 0.25). Each write is charged, on its die, for the garbage collection it causes:
//! per host page, WA − 1 valid pages are moved (a read and a program each) and WA /
//! `pages_per_block` blocks are erased, so a program operation holds the die for
//!
//! `program_time · WA + read_time · (WA − 1) + erase_time · WA / pages_per_block`.
//!
//! A multi-plane program pays this once, as its moves and erases are multi-plane too. Moved
//! pages stay on the die (as with copyback) and use no channel time. The charge is the same
//! for every write: without a page table the model cannot tell a sequential overwrite (WA near
//! 1 on a real drive) from a random one. Discards do not lower WA; they take `command_time`.
//!
//! # Write cache
//!
//! With `write_cache=1`, a write (without FUA) finishes once its data has crossed the link
//! into a cache of `cache_size` bytes; programming goes on in the background, and each
//! transaction's bytes are released when its program ends. A write whose data does not fit
//! waits, first in first out, before its host transfer. A flush finishes when every write
//! submitted before it is programmed. Reads are not served from the cache. Off by default so
//! that the calibration numbers are those of the flash.
//!
//! # Queues
//!
//! `queues` I/O queues of `depth` commands each: SATA/AHCI has one queue of 32 NCQ tags; an
//! NVMe drive has an I/O submission queue per CPU up to what the controller grants, each of
//! min(MQES + 1, `io_queue_depth`) entries with one left empty, 1023 under Linux's default
//! (blk-mq-host.md §7.1). Until the blk-mq host (a later slice of issue 18) maps cores onto
//! queues, the queues are one pool: the device holds `queues × depth` commands at once
//! (`queue_depth()`), and that is what the block queue keeps to. The controller then serves
//! them as before; there is no per-queue arbitration.
//!
//! # SLC write cache (fresh consumer drives)
//!
//! A TLC drive with `slc_cache` > 0 writes in SLC mode while its cache has room: such a write
//! transaction programs in `slc_program_time` instead of `program_time` (and pays no GC), and
//! takes its pages' bytes (whole pages, `page_size` each) from the cache. When the cache cannot
//! take a transaction's pages, it programs in TLC at `program_time` (with the GC charge when
//! `gc=1`): the write cliff of blk-mq-host.md §7.4 (980 PRO: 4-5 GB/s for 113 GB, then ≈ 1.5
//! GB/s). While the device holds no commands the cache folds back into TLC, freeing
//! `channels × dies × planes × page_size / (read_time + program_time)` bytes per second: every
//! die senses a cached page and programs it in TLC, on the die (no channel time, as GC's
//! moves). The decision is made when a command is cut into transactions, in submission order,
//! so runs stay reproducible.
//!
//! # Keys
//!
//! | key | default | range | meaning |
//! |---|---|---|---|
//! | `channels` | 8 | 1..=64 | flash channels (buses) |
//! | `dies` | 4 | 1..=64 | dies per channel (packages × dies per package) |
//! | `planes` | 2 | 1..=16 | planes per die |
//! | `page_size` | 4k | 512..=64k, a multiple of 512 | flash page |
//! | `pages_per_block` | 128 | 1..=4096 | pages per erase block (erase amortisation) |
//! | `read_time` | 52.5us | 0..=10ms | page sense time t_R |
//! | `program_time` | 900us | 0..=100ms | page program time t_PROG |
//! | `erase_time` | 3.5ms | 0..=1s | block erase time t_ERASE |
//! | `channel_rate` | 40960000 | 1m..=1t | bytes per second of one channel |
//! | `host_rate` | 300000000 | 1m..=1t | bytes per second of the host link |
//! | `command_time` | 20us | 0..=1s | controller time per command (a latency) |
//! | `depth` | 32 | 1..=65536 | commands per queue (NCQ tags; NVMe usable tags, 1023) |
//! | `queues` | 1 | 1..=1024, queues × depth ≤ 2^20 | I/O queues; the device holds queues × depth |
//! | `driver` | generic | — | the driver in front of it (`device/driver.rs`); generic keeps `depth` and 512 KiB requests |
//! | `capacity` | 80026361856 | 1m..=1024t, a multiple of `page_size` | exported size |
//! | `op` | 0.07 | 0..=1 | over-provisioning, spare / exported |
//! | `gc` | 0 | flag | 1: steady state with GC (WA from `op`); 0: fresh, WA 1 |
//! | `write_amplification` | unset | 1..=100 | WA with `gc=1`, overriding the one from `op` |
//! | `write_cache` | 0 | flag | writes finish when their data is in the cache |
//! | `cache_size` | 256m | 0..=1t, at least `planes` × `page_size` with the cache on | write cache |
//! | `slc_cache` | 0 | 0..=1024t | SLC cache bytes; 0: none |
//! | `slc_program_time` | unset | 0..=100ms, required with `slc_cache` > 0 | SLC-mode program time |
//!
//! Sizes and rates take binary suffixes (`333m` is 333 MiB/s); write decimal rates in bytes
//! (`333000000`).
//!
//! # Simplifications against MQSim
//!
//! * One die resource per chip×die, no chip-level interleaving of the command/address cycles;
//!   no cache-read or cache-program modes; no erase or program suspension.
//! * No mapping table, no CMT misses, no GC state: GC is a constant charge per write.
//! * No transaction scheduler reordering across commands (MQSim's out-of-order priority
//!   scheduler); multi-plane operations come only from one command.
//! * One shared host link for both directions; no NVMe queue arbitration or fetch size; the
//!   command time is a parallel latency (MQSim's SATA HBA applies its delay serially).
//! * The write cache is a byte budget, not MQSim's DRAM model; reads never hit it.
//!
//! # Today's presets and what they leave out
//!
//! `nvme-gen4-consumer` (Samsung 980 PRO 1 TB), `nvme-gen3-dc` (Samsung PM983 3.84 TB),
//! `sata-ssd-2021` (Samsung 870 EVO 1 TB; the classic study's 2010 drive keeps `sata-ssd`) and
//! `optane-ref` (Intel P4800X 375 GB) carry blk-mq-host.md §7.3's figures; each value's source
//! or arithmetic is in the preset's help, marked \[U\] where no source was found. Die and
//! plane counts follow §7.2: the physical dies × planes, checked to reach the datasheet IOPS.
//! As the model combines planes only within one command, a NAND preset's planes are modelled
//! as dies of one plane each (`planes=1`, `dies` = dies × planes / channels): 2020-era NAND
//! reads its planes independently, and a multi-plane program of P pages is as fast as P
//! one-plane programs on P units. Deviations, measured against the datasheets in
//! `tests/ssd_presets.rs` and `docs/validation.md`:
//!
//! * No controller limit on commands per second: a drive whose datasheet IOPS sit below its
//!   link's (PM983 540 K against 3.6 GB/s / 4 KiB = 880 K; 870 EVO 98 K against 146 K) runs
//!   at the link's bound. SATA's per-command FIS exchanges are not on the link.
//! * A 4 KiB write programs a whole page on its own: the FTL does not pack small writes from
//!   different commands into one page, so the 980 PRO's 4 KiB random writes in its SLC cache
//!   run at 64 / 200 us ≈ 320 K IOPS, not the datasheet's 1 M.
//! * GC's charge is the random-write WA for every write (see Write amplification), so a
//!   steady-state drive's sequential writes are as slow as its random ones per page.
//! * The SLC cache has a fixed size (Samsung's Intelligent TurboWrite shrinks its dynamic
//!   part as the drive fills) and folds only while the device holds no commands (a real
//!   drive also folds under light load); idle time starts at the last completion handed back,
//!   so with `write_cache=1` programs still running then count as folding time.
//! * Optane's 3D XPoint is modelled with NAND's keys: 512-byte pages (so a 4 KiB read spans
//!   the channels), no erase, no GC; its read and program times are derived from the QD 1
//!   latency and the sequential write rate, so those hold by construction.
//! * A preset's QD 1 latency is the device's as reviews measure it from an application: it
//!   includes the host's software path, which the blk-mq host (a later slice) will add on
//!   its own; then the device's share should shrink.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use elevator_core::{
    Duration, Instant, KeyKind, KeySpec, Op, ParamError, Params, SECTOR_SIZE_BYTES,
};

use super::{Command, CommandId, DeviceModel, DeviceStats, Preset};

/// One line for `elevator list devices`.
pub const SUMMARY: &str = "flash SSD: channels x dies x planes, page read/program/erase, \
                           channel and host link rates, write amplification";

/// The keys of `ssd`. The defaults are the `sata-ssd` preset.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "channels",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "8",
        help: "flash channels, each a bus shared by its dies",
    },
    KeySpec {
        key: "dies",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "4",
        help: "dies per channel (packages x dies per package)",
    },
    KeySpec {
        key: "planes",
        kind: KeyKind::Integer { min: 1, max: 16 },
        default: "2",
        help: "planes per die (pages of one command on one die share a read or program)",
    },
    KeySpec {
        key: "page_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 10 },
        default: "4k",
        help: "flash page size, a multiple of 512",
    },
    KeySpec {
        key: "pages_per_block",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "128",
        help: "pages per erase block (amortises erases under GC)",
    },
    KeySpec {
        key: "read_time",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "52.5us",
        help: "array read (sense) time of a page, t_R",
    },
    KeySpec {
        key: "program_time",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(100),
            bare_unit: "us",
        },
        default: "900us",
        help: "page program time, t_PROG",
    },
    KeySpec {
        key: "erase_time",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_secs(1), bare_unit: "us" },
        default: "3.5ms",
        help: "block erase time, t_ERASE",
    },
    KeySpec {
        key: "channel_rate",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "40960000",
        help: "bytes per second of one channel",
    },
    KeySpec {
        key: "host_rate",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "300000000",
        help: "bytes per second of the host link (SATA, PCIe lanes)",
    },
    KeySpec {
        key: "command_time",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_secs(1), bare_unit: "us" },
        default: "20us",
        help: "controller processing per command, spent in parallel by all commands",
    },
    KeySpec {
        key: "depth",
        kind: KeyKind::Integer { min: 1, max: 65_536 },
        default: "32",
        help: "commands per queue (SATA NCQ tags; NVMe usable tags per I/O queue, 1023 under \
               Linux's default io_queue_depth); the device holds queues x depth",
    },
    KeySpec {
        key: "queues",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "1",
        help: "I/O queues (SATA/AHCI 1; NVMe I/O submission queues); the device holds queues \
               x depth commands at once",
    },
    KeySpec {
        key: "capacity",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 50 },
        default: "80026361856",
        help: "exported size, a multiple of page_size",
    },
    KeySpec {
        key: "op",
        kind: KeyKind::Float { min: 0.0, max: 1.0, unit: "(spare / exported)" },
        default: "0.07",
        help: "over-provisioning; with gc=1, WA = (1+op)/(2*op)",
    },
    KeySpec {
        key: "gc",
        kind: KeyKind::Flag,
        default: "0",
        help: "1: steady state, writes pay garbage collection; 0: fresh drive, WA 1",
    },
    KeySpec {
        key: "write_amplification",
        kind: KeyKind::Float { min: 1.0, max: 100.0, unit: "(flash pages per host page)" },
        default: "",
        help: "WA with gc=1, instead of the one derived from op",
    },
    KeySpec {
        key: "write_cache",
        kind: KeyKind::Flag,
        default: "0",
        help: "1: writes finish when their data is in the cache; flushes wait for programs",
    },
    KeySpec {
        key: "cache_size",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 40 },
        default: "256m",
        help: "write cache size (with write_cache=1), at least planes x page_size",
    },
    KeySpec {
        key: "slc_cache",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 50 },
        default: "0",
        help: "SLC write cache of a TLC drive: this many bytes of writes program in SLC mode \
               (slc_program_time) before writes fall to the native program_time; idle time \
               folds it back. 0: none",
    },
    KeySpec {
        key: "slc_program_time",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(100),
            bare_unit: "us",
        },
        default: "",
        help: "page program time in SLC mode (required with slc_cache > 0)",
    },
    super::driver::DRIVER_KEY,
];

/// The presets of `ssd`; the first is what a bare `ssd` means.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "sata-ssd",
        help: "a 2010-era SATA MLC SSD (the key defaults): 8 channels x 4 dies x 2 planes, 4 KiB \
               pages of 128 per block; MLC t_R 52.5 us, t_PROG 900 us (SimpleSSD's LSB/MSB \
               averages, devices.md 2.2), t_ERASE 3.5 ms (SimpleSSD); 40.96 MB/s channels (a \
               4 KiB page in 100 us, Agrawal 2008, devices.md 2.3); SATA 3 Gb/s link = 300 MB/s; \
               NCQ 32; 20 us per command (MQSim's SATA_Processing_Delay is 400 us, but MQSim \
               spends it one request at a time; 2010 MLC SATA drives read 4 KiB in well under \
               200 us at queue depth 1, which leaves tens of microseconds for the controller); \
               80 GB, op 0.07",
        values: &[],
    },
    Preset {
        name: "nvme",
        help: "MQSim's default device (devices.md 2.1): 8 channels x (4 chips x 2 dies) x 2 \
               planes, 8 KiB pages of 256 per block, t_R 75 us, t_PROG 750 us, t_ERASE 3.8 ms, \
               333 MT/s x 8-bit channels, PCIe 4 lanes x 1 GB/s, op 0.07, 512 GiB raw = 476 GiB \
               exported; 5 us per command (SimpleSSD's FTL latency, devices.md 2.2; MQSim has \
               no NVMe command delay); 1024 commands",
        values: &[
            ("channels", "8"),
            ("dies", "8"),
            ("planes", "2"),
            ("page_size", "8k"),
            ("pages_per_block", "256"),
            ("read_time", "75us"),
            ("program_time", "750us"),
            ("erase_time", "3.8ms"),
            ("channel_rate", "333000000"),
            ("host_rate", "4000000000"),
            ("command_time", "5us"),
            ("depth", "1024"),
            ("capacity", "476g"),
            ("op", "0.07"),
        ],
    },
    Preset {
        name: "agrawal-slc-2008",
        help: "one package of Agrawal et al., USENIX ATC 2008 (devices.md 2.3): Samsung \
               K9XXG08UXM SLC, 1 die of 4 planes, 4 KiB pages of 64 per block, t_R 25 us, \
               t_PROG 200 us, t_ERASE 1.5 ms, a 4 KiB page shifted in 100 us (40.96 MB/s); \
               2 GiB; SATA 3 Gb/s link, no command time. Set dies=2 or 4 for the 2 and 4 GB \
               packages",
        values: &[
            ("channels", "1"),
            ("dies", "1"),
            ("planes", "4"),
            ("page_size", "4k"),
            ("pages_per_block", "64"),
            ("read_time", "25us"),
            ("program_time", "200us"),
            ("erase_time", "1.5ms"),
            ("channel_rate", "40960000"),
            ("host_rate", "300000000"),
            ("command_time", "0"),
            ("depth", "32"),
            ("capacity", "2g"),
            ("op", "0.07"),
        ],
    },
    Preset {
        name: "nvme-gen4-consumer",
        help: "Samsung 980 PRO 1 TB, fresh with its SLC cache (blk-mq-host.md 7.3, Samsung spec \
               tables, TechPowerUp review; [U] = not from a source, [D] = derived). Elpis \
               controller, 8 channels [U]; 1 TB of 512 Gbit 128L TLC = 16 dies x 4 planes \
               (7.2), modelled as 8 channels x 8 independently reading planes (dies=8, \
               planes=1: the model's die is a unit that senses on its own, 16 x 4 = 64, so \
               64 / (50 us + 3.4 us) = 1.2 M reads/s >= 1 M IOPS, 7.2); 16 KiB pages [U], 384 \
               per block [U]; t_R 50 us (7.2's example), TLC t_PROG 600 us and t_ERASE 4 ms \
               (midpoints of 7.2's 0.4-0.8 ms and 3-5 ms [U]); SLC-mode program 200 us [U, the \
               top of 7.2's 0.1-0.2 ms: the midpoint would write 64 x 16 KiB / 163.6 us = 6.4 \
               GB/s, above the datasheet's 5,000 MB/s; 200 us gives 4.9 GB/s]; SLC cache 113 GB \
               (TechPowerUp); channels 1.2 GB/s [U: Toggle DDR 4.0 x 8 bit]; PCIe 4.0 x4 = 16 \
               GT/s x 4 x 128/130 / 8 = 7.88 GB/s, x 256/280 for 256-byte TLP payloads with \
               24-byte headers = 7.2 GB/s [D]; 5 us per command (as `nvme`); 32 queues [U] x \
               1023 tags (7.1); capacity 1,000,204,886,016 bytes rounded down to whole 16 KiB \
               pages; op = 1024 GiB raw / 1000.2 GB - 1 = 0.099 [D]; fresh (gc=0)",
        values: &[
            ("channels", "8"),
            ("dies", "8"),
            ("planes", "1"),
            ("page_size", "16k"),
            ("pages_per_block", "384"),
            ("read_time", "50us"),
            ("program_time", "600us"),
            ("erase_time", "4ms"),
            ("channel_rate", "1200000000"),
            ("host_rate", "7200000000"),
            ("command_time", "5us"),
            ("depth", "1023"),
            ("queues", "32"),
            ("capacity", "1000204877824"),
            ("op", "0.099"),
            ("slc_cache", "113000000000"),
            ("slc_program_time", "200us"),
        ],
    },
    Preset {
        name: "nvme-gen3-dc",
        help: "Samsung PM983 3.84 TB U.2 in steady state (blk-mq-host.md 7.3, PM983 datasheet \
               Rev 1.0: specs are after preconditioning, 7.4; [U] = not from a source, [D] = \
               derived). 8 channels [U]; 4 TiB raw of 512 Gbit TLC = 64 dies [D] x 2 planes \
               [U], modelled as 8 channels x 16 independently reading planes (dies=16, \
               planes=1), so 128 / (60 us + 5.1 us) = 2.0 M reads/s >= 540 K IOPS (7.2); 16 KiB \
               pages, 384 per block [U]; t_R 60 us (2018 64-layer NAND: the top of 7.2's \
               2020-era 40-60 us [U]), t_PROG 600 us, t_ERASE 4 ms (7.2's midpoints [U]); \
               channels 800 MB/s [U: Toggle DDR 3.0 x 8 bit]; PCIe 3.0 x4 = 8 GT/s x 4 x \
               128/130 / 8 x 256/280 = 3.6 GB/s [D]; 5 us per command (as `nvme`); 64 queues \
               [U] x 1023 tags (7.1); capacity 3,840,755,982,336 bytes rounded down to whole \
               pages; op = 4 TiB / 3.84 TB - 1 = 0.145 [D]; steady state (gc=1: WA = \
               (1+op)/(2 op) = 3.94); power-loss-protected write cache on, 256 MiB [U] (the \
               datasheet's 50 us QD 1 write is a cached write)",
        values: &[
            ("channels", "8"),
            ("dies", "16"),
            ("planes", "1"),
            ("page_size", "16k"),
            ("pages_per_block", "384"),
            ("read_time", "60us"),
            ("program_time", "600us"),
            ("erase_time", "4ms"),
            ("channel_rate", "800000000"),
            ("host_rate", "3600000000"),
            ("command_time", "5us"),
            ("depth", "1023"),
            ("queues", "64"),
            ("capacity", "3840755974144"),
            ("op", "0.145"),
            ("gc", "1"),
            ("write_cache", "1"),
            ("cache_size", "256m"),
        ],
    },
    Preset {
        name: "sata-ssd-2021",
        help: "Samsung 870 EVO 1 TB, fresh with its SLC buffer (blk-mq-host.md 7.3, Tom's \
               Hardware, KitGuru; [U] = not from a source, [D] = derived). The classic study's \
               2010 drive keeps the name `sata-ssd`. MKX controller, 8 channels (7.3); 1 TB of \
               512 Gbit 128L TLC = 16 dies x 4 planes, as 8 channels x 8 independently reading \
               planes (dies=8, planes=1, as `nvme-gen4-consumer`); 16 KiB pages, 384 per block \
               [U]; t_R 50 us, t_PROG 600 us, t_ERASE 4 ms, SLC program 200 us (as \
               `nvme-gen4-consumer`, 7.2 [U]); SLC buffer 42 GB [U: Samsung's 6 GB static + 36 \
               GB dynamic TurboWrite for 1 TB, not retrieved]; channels 1.2 GB/s [U]; SATA 6 \
               Gb/s with 8b/10b = 600 MB/s [D]; 20 us per command (as `sata-ssd`); one queue x \
               NCQ 32 (7.1); capacity 1,000,204,886,016 bytes rounded down to whole pages; op \
               0.099 [D, as the 980 PRO]",
        values: &[
            ("channels", "8"),
            ("dies", "8"),
            ("planes", "1"),
            ("page_size", "16k"),
            ("pages_per_block", "384"),
            ("read_time", "50us"),
            ("program_time", "600us"),
            ("erase_time", "4ms"),
            ("channel_rate", "1200000000"),
            ("host_rate", "600000000"),
            ("command_time", "20us"),
            ("depth", "32"),
            ("queues", "1"),
            ("capacity", "1000204877824"),
            ("op", "0.099"),
            ("slc_cache", "42000000000"),
            ("slc_program_time", "200us"),
        ],
    },
    Preset {
        name: "optane-ref",
        help: "Intel Optane P4800X 375 GB (blk-mq-host.md 7.3, AnandTech; [U] = not from a \
               source, [D] = derived). 3D XPoint has no pages to erase and writes in place: \
               gc=0, t_ERASE 0, no cache cliff. 7 channels x 4 dies = 28 dies of 128 Gbit [U]; \
               512-byte pages [U] (media addressed in small units), so a 4 KiB read spreads \
               over all 7 channels; channels 2,400 MB/s / 7 = 343 MB/s [D from Intel's \
               2,400 MB/s sequential read, U: not in the spec]; PCIe 3.0 x4 = 3.6 GB/s [D]; \
               command 2 us [U]; read_time 3.77 us [D: AnandTech's 8.9 us QD 1 mean less the \
               command time, the two 512-byte pages one channel carries (3.0 us) and the last \
               one over the link (0.14 us), so QD 1 holds by construction]; program_time \
               5.7 us [D: 28 x 512 B / (t + 1.5 us load) = Intel's 2,000 MB/s sequential \
               write, U: not in the spec]; 32 queues [U] x 1023 tags",
        values: &[
            ("channels", "7"),
            ("dies", "4"),
            ("planes", "1"),
            ("page_size", "512"),
            ("pages_per_block", "1"),
            ("read_time", "3.77us"),
            ("program_time", "5.7us"),
            ("erase_time", "0"),
            ("channel_rate", "342857143"),
            ("host_rate", "3600000000"),
            ("command_time", "2us"),
            ("depth", "1023"),
            ("queues", "32"),
            ("capacity", "375083606016"),
            ("op", "0.07"),
        ],
    },
];

/// The most commands one device holds (`queues × depth`): 64 queues of 1023 fit; slots are
/// allocated as commands arrive, so this bounds memory only under a host that fills them.
const MAX_COMMANDS: u64 = 1 << 20;

/// "No transaction" in the intrusive lists and resource slots.
const NONE: u32 = u32::MAX;

/// The simulated SSD.
#[derive(Debug)]
pub struct Ssd {
    channel_count: u32,
    dies_per_channel: u32,
    planes_per_die: u32,
    /// `channel_count × dies_per_channel`.
    die_count: u32,
    page_size_bytes: u64,
    pages_per_block: u64,
    read_ns: u64,
    program_ns: u64,
    erase_ns: u64,
    /// How long one program operation holds its die, garbage collection included.
    program_charge_ns: u64,
    channel_bytes_per_s: u64,
    host_bytes_per_s: u64,
    command_ns: u64,
    /// Commands per queue.
    depth: u32,
    /// I/O queues; the device holds `queues × depth` commands.
    queues: u32,
    capacity_sectors: u64,
    /// Bytes of writes the SLC cache takes when empty; 0 without one.
    slc_cache_bytes: u64,
    /// Bytes of the SLC cache still free.
    slc_free_bytes: u64,
    /// How long one SLC-mode program holds its die.
    slc_program_ns: u64,
    /// Bytes per second the SLC cache empties while the device is idle (folding).
    slc_fold_bytes_per_s: u64,
    /// When the device last became idle (nothing inside).
    idle_since_ns: u64,
    /// Steady state: writes pay garbage collection.
    gc: bool,
    /// 1 on a fresh drive.
    write_amplification: f64,
    /// 0 when the write cache is off.
    cache_size_bytes: u64,

    /// Dies by global index `channel + channel_count × position`.
    dies: Vec<Resource>,
    channels: Vec<Resource>,
    host: Resource,
    /// Write transactions waiting for cache space.
    cache_wait: Fifo,
    cache_free_bytes: u64,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    transactions: Vec<Transaction>,
    free_transactions: Vec<u32>,
    /// Commands in their `command_time`, by (start time, sequence): all pay the same time, so
    /// submission order is start order and a queue suffices.
    starts: VecDeque<(u64, u64, u32)>,
    /// Ends of die, channel and link operations: (time, sequence, resource). Each resource has
    /// at most one, so the heap never outgrows its initial capacity.
    events: BinaryHeap<Reverse<(u64, u64, u32)>>,
    event_sequence: u64,
    submitted: u64,
    /// Where the next written page goes (a location index, see the mapping).
    write_pointer: u64,
    /// Flushes waiting for cached writes.
    flushes_waiting: Vec<u32>,
    /// Finished during the current `advance`, in order.
    done: Vec<CommandId>,
    /// Commands handed in and not yet handed back.
    inside: u32,
    busy_since_ns: u64,
    counters: Counters,
    stats: DeviceStats,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    pages_read: u64,
    pages_programmed: u64,
    read_operations: u64,
    program_operations: u64,
    cache_stalls: u64,
    slc_pages: u64,
    flushes: u64,
    discards: u64,
}

/// A die, a channel or the host link: the transaction it serves and those waiting for it.
#[derive(Clone, Copy, Debug)]
struct Resource {
    current: u32,
    queue: Fifo,
}

impl Resource {
    const IDLE: Resource = Resource { current: NONE, queue: Fifo::EMPTY };
}

/// A first-in first-out list of transactions threaded through [`Transaction::next`]; a
/// transaction is in at most one list at a time.
#[derive(Clone, Copy, Debug)]
struct Fifo {
    head: u32,
    tail: u32,
}

impl Fifo {
    const EMPTY: Fifo = Fifo { head: NONE, tail: NONE };

    fn push(&mut self, transactions: &mut [Transaction], index: u32) {
        transactions[index as usize].next = NONE;
        if self.tail == NONE {
            self.head = index;
        } else {
            transactions[self.tail as usize].next = index;
        }
        self.tail = index;
    }

    fn pop(&mut self, transactions: &[Transaction]) -> Option<u32> {
        if self.head == NONE {
            return None;
        }
        let index = self.head;
        self.head = transactions[index as usize].next;
        if self.head == NONE {
            self.tail = NONE;
        }
        Some(index)
    }
}

/// The part of one command on one die: one (multi-plane) read or program.
#[derive(Clone, Copy, Debug)]
struct Transaction {
    slot: u32,
    die: u32,
    /// Pages read or programmed together (at most `planes_per_die`).
    page_count: u32,
    /// Bytes over the channel and the link.
    size_bytes: u32,
    write: bool,
    /// A write programmed in SLC mode (into the SLC cache).
    slc: bool,
    next: u32,
}

/// A command inside the device (slots are reused).
#[derive(Clone, Copy, Debug)]
struct Slot {
    id: CommandId,
    op: Op,
    start_sector: u64,
    sector_count: u32,
    /// A cached write: finishes when its data is in the cache.
    early: bool,
    /// Submission order; a flush waits for the cached writes ordered before it.
    order: u64,
    /// Transactions not through every stage.
    transactions_pending: u32,
    /// Write transactions whose host transfer has not ended.
    host_pending: u32,
    /// Cached writes a flush still waits for.
    writes_awaited: u32,
    /// Handed back to the engine already.
    reported: bool,
    live: bool,
}

impl Ssd {
    /// An SSD from checked parameters; values impossible together are refused with the key to
    /// change.
    pub fn from_params(params: &Params) -> Result<Ssd, ParamError> {
        let channel_count = params.integer("channels") as u32;
        let dies_per_channel = params.integer("dies") as u32;
        let planes_per_die = params.integer("planes") as u32;
        let page_size_bytes = params.size("page_size");
        if page_size_bytes % SECTOR_SIZE_BYTES != 0 {
            return Err(params.impossible(
                "page_size",
                format!("{page_size_bytes} bytes is not a multiple of 512 (accepted: 512..=64k)"),
            ));
        }
        let capacity_bytes = params.size("capacity");
        if capacity_bytes % page_size_bytes != 0 {
            return Err(params.impossible(
                "capacity",
                format!(
                    "{} is not a whole number of {}-byte pages (accepted: a multiple of \
                     page_size in 1m..=1024t)",
                    elevator_core::format_size(capacity_bytes),
                    page_size_bytes
                ),
            ));
        }
        let gc = params.flag("gc");
        let op = params.float("op");
        let write_amplification = if !gc {
            if params.has("write_amplification") {
                return Err(params.impossible(
                    "write_amplification",
                    "applies only with gc=1 (a fresh drive, gc=0, has WA 1)",
                ));
            }
            1.0
        } else if params.has("write_amplification") {
            params.float("write_amplification")
        } else {
            if op <= 0.0 {
                return Err(params.impossible(
                    "op",
                    "must be above 0 with gc=1, as WA = (1+op)/(2*op) (accepted: 0 < op <= 1, \
                     or set write_amplification)",
                ));
            }
            (1.0 + op) / (2.0 * op)
        };
        let cache_size_bytes = if params.flag("write_cache") {
            let size = params.size("cache_size");
            let largest = u64::from(planes_per_die) * page_size_bytes;
            if size < largest {
                return Err(params.impossible(
                    "cache_size",
                    format!(
                        "{} cannot hold one multi-plane write of planes x page_size = {} \
                         (accepted: {}..=1t)",
                        elevator_core::format_size(size),
                        elevator_core::format_size(largest),
                        elevator_core::format_size(largest)
                    ),
                ));
            }
            size
        } else {
            0
        };
        let read_ns = params.time("read_time").as_nanos();
        let program_ns = params.time("program_time").as_nanos();
        let erase_ns = params.time("erase_time").as_nanos();
        let pages_per_block = params.integer("pages_per_block") as u64;
        let program_charge_ns = if gc {
            // The floats meet once, here; the simulation runs on the rounded integer.
            let charge = program_ns as f64 * write_amplification
                + read_ns as f64 * (write_amplification - 1.0)
                + erase_ns as f64 * write_amplification / pages_per_block as f64;
            charge.round() as u64
        } else {
            program_ns
        };
        let die_count = channel_count * dies_per_channel;
        let depth = params.integer("depth") as u32;
        let queues = params.integer("queues") as u32;
        if u64::from(depth) * u64::from(queues) > MAX_COMMANDS {
            return Err(params.impossible(
                "queues",
                format!(
                    "{queues} queues x depth {depth} = {} commands is more than the model holds \
                     (accepted: queues x depth <= {MAX_COMMANDS})",
                    u64::from(depth) * u64::from(queues)
                ),
            ));
        }
        let slc_cache_bytes = params.size("slc_cache");
        // A preset's SLC program time stays quietly unused when its cache is turned off
        // (`slc_cache=0`); one the user sets without a cache is refused.
        let slc_program_ns = match (slc_cache_bytes > 0, params.has("slc_program_time")) {
            (true, true) => params.time("slc_program_time").as_nanos(),
            (false, true) if !params.is_set("slc_program_time") => 0,
            (true, false) => {
                return Err(params.impossible(
                    "slc_program_time",
                    "is required with slc_cache > 0 (accepted: a time 0..=100ms, e.g. 200us)",
                ));
            }
            (false, true) => {
                return Err(params.impossible(
                    "slc_program_time",
                    "applies only with slc_cache > 0 (accepted: unset, or set slc_cache)",
                ));
            }
            (false, false) => 0,
        };
        // Folding reads each cached page (one sense) and programs it in TLC, on its own die
        // (no channel time, as GC's moves), all dies and planes at once.
        let slc_fold_bytes_per_s = (u128::from(die_count)
            * u128::from(planes_per_die)
            * u128::from(page_size_bytes)
            * 1_000_000_000
            / u128::from((read_ns + program_ns).max(1))) as u64;
        let resource_count = die_count as usize + channel_count as usize + 1;
        Ok(Ssd {
            channel_count,
            dies_per_channel,
            planes_per_die,
            die_count,
            page_size_bytes,
            pages_per_block,
            read_ns,
            program_ns,
            erase_ns,
            program_charge_ns,
            channel_bytes_per_s: params.size("channel_rate"),
            host_bytes_per_s: params.size("host_rate"),
            command_ns: params.time("command_time").as_nanos(),
            depth,
            queues,
            capacity_sectors: capacity_bytes / SECTOR_SIZE_BYTES,
            slc_cache_bytes,
            slc_free_bytes: slc_cache_bytes,
            slc_program_ns,
            slc_fold_bytes_per_s,
            idle_since_ns: 0,
            gc,
            write_amplification,
            cache_size_bytes,
            dies: vec![Resource::IDLE; die_count as usize],
            channels: vec![Resource::IDLE; channel_count as usize],
            host: Resource::IDLE,
            cache_wait: Fifo::EMPTY,
            cache_free_bytes: cache_size_bytes,
            slots: Vec::new(),
            free_slots: Vec::new(),
            transactions: Vec::new(),
            free_transactions: Vec::new(),
            starts: VecDeque::with_capacity((depth as usize).min(4096)),
            events: BinaryHeap::with_capacity(resource_count),
            event_sequence: 0,
            submitted: 0,
            write_pointer: 0,
            flushes_waiting: Vec::new(),
            done: Vec::new(),
            inside: 0,
            busy_since_ns: 0,
            counters: Counters::default(),
            stats: DeviceStats::default(),
        })
    }

    fn page_sectors(&self) -> u64 {
        self.page_size_bytes / SECTOR_SIZE_BYTES
    }

    fn host_index(&self) -> u32 {
        self.die_count + self.channel_count
    }
}

/// Time to move `size_bytes` at `bytes_per_s`, rounded up so that no transfer takes zero time.
/// A transaction is at most 16 pages of 64 KiB, so the product fits in a u64.
fn transfer_ns(size_bytes: u64, bytes_per_s: u64) -> u64 {
    (size_bytes * 1_000_000_000).div_ceil(bytes_per_s)
}

impl DeviceModel for Ssd {
    fn describe(&self) -> String {
        format!(
            "ssd: {} channels x {} dies x {} planes, {} pages, read {} / program {} / erase {}, \
             channel {} B/s, host {} B/s, command {}, {} commands{}, WA {:.2}{}{}",
            self.channel_count,
            self.dies_per_channel,
            self.planes_per_die,
            elevator_core::format_size(self.page_size_bytes),
            Duration::from_nanos(self.read_ns),
            Duration::from_nanos(self.program_ns),
            Duration::from_nanos(self.erase_ns),
            self.channel_bytes_per_s,
            self.host_bytes_per_s,
            Duration::from_nanos(self.command_ns),
            self.depth,
            if self.queues > 1 { format!(" x {} queues", self.queues) } else { String::new() },
            self.write_amplification,
            if self.cache_size_bytes > 0 {
                format!(", {} write cache", elevator_core::format_size(self.cache_size_bytes))
            } else {
                String::new()
            },
            if self.slc_cache_bytes > 0 {
                format!(
                    ", {} SLC cache (program {})",
                    elevator_core::format_size(self.slc_cache_bytes),
                    Duration::from_nanos(self.slc_program_ns)
                )
            } else {
                String::new()
            }
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    fn queue_depth(&self) -> u32 {
        // Until the blk-mq host maps cores onto queues, every queue's tags are one pool.
        self.depth * self.queues
    }

    fn rotational(&self) -> bool {
        false
    }

    fn hw_queues(&self) -> u32 {
        self.queues
    }

    fn submit(&mut self, now: Instant, command: Command) {
        let held = self.queue_depth();
        assert!(self.inside < held, "ssd: more than {held} commands inside");
        assert!(
            command.end().0 <= self.capacity_sectors,
            "ssd: {:?} ends past the capacity of {} sectors",
            command,
            self.capacity_sectors
        );
        match command.op {
            Op::Read => self.stats.sectors_read += u64::from(command.sector_count),
            Op::Write => self.stats.sectors_written += u64::from(command.sector_count),
            Op::Flush => self.counters.flushes += 1,
            Op::Discard => self.counters.discards += 1,
        }
        let slot = Slot {
            id: command.id,
            op: command.op,
            start_sector: command.start.0,
            sector_count: command.sector_count,
            early: self.cache_size_bytes > 0 && command.op == Op::Write && !command.fua,
            order: self.submitted,
            transactions_pending: 0,
            host_pending: 0,
            writes_awaited: 0,
            reported: false,
            live: true,
        };
        self.submitted += 1;
        let index = match self.free_slots.pop() {
            Some(index) => {
                self.slots[index as usize] = slot;
                index
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        if self.inside == 0 {
            self.busy_since_ns = now.as_nanos();
            self.fold_while_idle(now.as_nanos());
        }
        self.inside += 1;
        self.starts.push_back((now.as_nanos() + self.command_ns, self.event_sequence, index));
        self.event_sequence += 1;
    }

    fn next_event(&self) -> Option<Instant> {
        let step = self.events.peek().map(|Reverse((at, _, _))| *at);
        let start = self.starts.front().map(|&(at, _, _)| at);
        match (step, start) {
            (Some(step), Some(start)) => Some(step.min(start)),
            (step, start) => step.or(start),
        }
        .map(Instant::from_nanos)
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        let now_ns = now.as_nanos();
        loop {
            let step = self.events.peek().map(|Reverse((at, sequence, _))| (*at, *sequence));
            let start = self.starts.front().map(|&(at, sequence, _)| (at, sequence));
            let take_start = match (step, start) {
                (None, None) => break,
                (Some(step), Some(start)) => start < step,
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            if take_start {
                let (at, _, slot) = self.starts[0];
                if at > now_ns {
                    break;
                }
                self.starts.pop_front();
                self.start_command(at, slot);
            } else {
                let Some(&Reverse((at, _, resource))) = self.events.peek() else { break };
                if at > now_ns {
                    break;
                }
                self.events.pop();
                self.end_operation(at, resource);
            }
        }
        finished.append(&mut self.done);
    }

    fn stats(&self) -> DeviceStats {
        let counters = self.counters;
        let mut stats = self.stats.clone();
        // GC work is a constant share per host page, derived here rather than accumulated.
        let programmed = counters.pages_programmed as f64;
        let (gc_pages, erases) = if self.gc {
            (
                (programmed * (self.write_amplification - 1.0)).floor() as u64,
                (programmed * self.write_amplification / self.pages_per_block as f64).floor()
                    as u64,
            )
        } else {
            (0, 0)
        };
        stats.extra = vec![
            ("pages_read", counters.pages_read),
            ("pages_programmed", counters.pages_programmed),
            ("read_operations", counters.read_operations),
            ("program_operations", counters.program_operations),
            ("gc_pages", gc_pages),
            ("erases", erases),
            ("cache_stalls", counters.cache_stalls),
            ("flushes", counters.flushes),
            ("discards", counters.discards),
        ];
        if self.slc_cache_bytes > 0 {
            // Only drives with an SLC cache report it, so older outputs stay as they were.
            stats.extra.push(("slc_pages", counters.slc_pages));
        }
        stats
    }
}

// Helpers of `advance`, in the order a command meets them.
impl Ssd {
    fn schedule(&mut self, at_ns: u64, resource: u32) {
        self.events.push(Reverse((at_ns, self.event_sequence, resource)));
        self.event_sequence += 1;
    }

    /// The command's `command_time` is over: cut it into transactions and queue them.
    fn start_command(&mut self, at: u64, slot: u32) {
        let Slot { op, sector_count, order, .. } = self.slots[slot as usize];
        match op {
            Op::Read | Op::Write if sector_count > 0 => self.start_command_split(at, slot),
            Op::Flush if self.cache_size_bytes > 0 => {
                // Every cached write ordered before the flush is still live in a slot.
                let awaited = self
                    .slots
                    .iter()
                    .filter(|other| other.live && other.early && other.order < order)
                    .count() as u32;
                if awaited == 0 {
                    self.finish_command(at, slot);
                } else {
                    self.slots[slot as usize].writes_awaited = awaited;
                    self.flushes_waiting.push(slot);
                }
            }
            // Without a volatile cache a flush has nothing to do; a discard updates the map.
            _ => self.finish_command(at, slot),
        }
    }

    /// Groups the command's pages by die and stripe (see the module's mapping) and queues one
    /// transaction per group.
    fn start_command_split(&mut self, at: u64, slot: u32) {
        let Slot { op, start_sector, sector_count, .. } = self.slots[slot as usize];
        let write = op == Op::Write;
        let page_sectors = self.page_sectors();
        let end_sector = start_sector + u64::from(sector_count);
        let first_page = start_sector / page_sectors;
        let page_count = (end_sector - 1) / page_sectors - first_page + 1;
        // Sectors of the first and last pages outside the command: they do not move.
        let head_trim = start_sector % page_sectors;
        let tail_trim = (page_sectors - end_sector % page_sectors) % page_sectors;
        let base = if write {
            let base = self.write_pointer;
            self.write_pointer += page_count;
            base
        } else {
            first_page
        };
        let dies = u64::from(self.die_count);
        let stripe = dies * u64::from(self.planes_per_die);
        let last = base + page_count - 1;
        let mut low = base;
        while low <= last {
            let high = ((low / stripe + 1) * stripe).min(last + 1);
            for offset in 0..(high - low).min(dies) {
                let first = low + offset;
                let group_pages = (high - 1 - first) / dies + 1;
                let mut sectors = group_pages * page_sectors;
                if first == base {
                    sectors -= head_trim;
                }
                if last < high && (last - first) % dies == 0 {
                    sectors -= tail_trim;
                }
                // The pages go to the SLC cache while it has room for all of them.
                let programmed_bytes = group_pages * self.page_size_bytes;
                let slc = write && self.slc_free_bytes >= programmed_bytes;
                if slc {
                    self.slc_free_bytes -= programmed_bytes;
                }
                let transaction = Transaction {
                    slot,
                    die: (first % dies) as u32,
                    page_count: group_pages as u32,
                    size_bytes: (sectors * SECTOR_SIZE_BYTES) as u32,
                    write,
                    slc,
                    next: NONE,
                };
                let index = match self.free_transactions.pop() {
                    Some(index) => {
                        self.transactions[index as usize] = transaction;
                        index
                    }
                    None => {
                        self.transactions.push(transaction);
                        (self.transactions.len() - 1) as u32
                    }
                };
                let entry = &mut self.slots[slot as usize];
                entry.transactions_pending += 1;
                if write {
                    entry.host_pending += 1;
                    let size = u64::from(transaction.size_bytes);
                    if self.cache_size_bytes > 0
                        && (self.cache_wait.head != NONE || size > self.cache_free_bytes)
                    {
                        // No room (or others wait already): wait for programs to free some.
                        self.counters.cache_stalls += 1;
                        self.cache_wait.push(&mut self.transactions, index);
                    } else {
                        if self.cache_size_bytes > 0 {
                            self.cache_free_bytes -= size;
                        }
                        self.host.queue.push(&mut self.transactions, index);
                        self.try_start_host(at);
                    }
                } else {
                    let die = transaction.die;
                    self.dies[die as usize].queue.push(&mut self.transactions, index);
                    self.try_start_die(at, die);
                }
            }
            low = high;
        }
    }

    /// Moves cached writes that now fit from the cache queue to the link, in order.
    fn admit_cached(&mut self, at: u64) {
        let mut admitted = false;
        while self.cache_wait.head != NONE {
            let size = u64::from(self.transactions[self.cache_wait.head as usize].size_bytes);
            if size > self.cache_free_bytes {
                break;
            }
            self.cache_free_bytes -= size;
            let index = self.cache_wait.pop(&self.transactions).unwrap_or(NONE);
            self.host.queue.push(&mut self.transactions, index);
            admitted = true;
        }
        if admitted {
            self.try_start_host(at);
        }
    }

    fn try_start_die(&mut self, at: u64, die: u32) {
        let resource = &mut self.dies[die as usize];
        if resource.current != NONE {
            return;
        }
        let Some(index) = resource.queue.pop(&self.transactions) else { return };
        resource.current = index;
        let transaction = self.transactions[index as usize];
        if transaction.write {
            // The die is held while the channel loads its page register.
            self.channel_enqueue(at, die, index);
        } else {
            self.counters.read_operations += 1;
            self.counters.pages_read += u64::from(transaction.page_count);
            self.schedule(at + self.read_ns, die);
        }
    }

    fn channel_enqueue(&mut self, at: u64, die: u32, index: u32) {
        let channel = die % self.channel_count;
        self.channels[channel as usize].queue.push(&mut self.transactions, index);
        self.try_start_channel(at, channel);
    }

    fn try_start_channel(&mut self, at: u64, channel: u32) {
        let resource = &mut self.channels[channel as usize];
        if resource.current != NONE {
            return;
        }
        let Some(index) = resource.queue.pop(&self.transactions) else { return };
        resource.current = index;
        let size = u64::from(self.transactions[index as usize].size_bytes);
        let end = at + transfer_ns(size, self.channel_bytes_per_s);
        self.schedule(end, self.die_count + channel);
    }

    fn try_start_host(&mut self, at: u64) {
        if self.host.current != NONE {
            return;
        }
        let Some(index) = self.host.queue.pop(&self.transactions) else { return };
        self.host.current = index;
        let size = u64::from(self.transactions[index as usize].size_bytes);
        let end = at + transfer_ns(size, self.host_bytes_per_s);
        self.schedule(end, self.host_index());
    }

    /// A die, channel or link operation ended at `at`.
    fn end_operation(&mut self, at: u64, resource: u32) {
        if resource < self.die_count {
            self.end_operation_die(at, resource);
        } else if resource < self.host_index() {
            self.end_operation_channel(at, resource - self.die_count);
        } else {
            self.end_operation_host(at);
        }
    }

    fn end_operation_die(&mut self, at: u64, die: u32) {
        let index = self.dies[die as usize].current;
        let transaction = self.transactions[index as usize];
        if transaction.write {
            // Programmed: the die is free, the cache space too.
            self.dies[die as usize].current = NONE;
            self.counters.program_operations += 1;
            self.counters.pages_programmed += u64::from(transaction.page_count);
            if transaction.slc {
                self.counters.slc_pages += u64::from(transaction.page_count);
            }
            if self.cache_size_bytes > 0 {
                self.cache_free_bytes += u64::from(transaction.size_bytes);
                self.admit_cached(at);
            }
            self.end_transaction(at, index);
            self.try_start_die(at, die);
        } else {
            // Sensed: the data waits in the page register for the channel.
            self.channel_enqueue(at, die, index);
        }
    }

    fn end_operation_channel(&mut self, at: u64, channel: u32) {
        let index = self.channels[channel as usize].current;
        self.channels[channel as usize].current = NONE;
        let transaction = self.transactions[index as usize];
        if transaction.write {
            let program_ns =
                if transaction.slc { self.slc_program_ns } else { self.program_charge_ns };
            self.schedule(at + program_ns, transaction.die);
        } else {
            self.dies[transaction.die as usize].current = NONE;
            self.try_start_die(at, transaction.die);
            self.host.queue.push(&mut self.transactions, index);
            self.try_start_host(at);
        }
        self.try_start_channel(at, channel);
    }

    fn end_operation_host(&mut self, at: u64) {
        let index = self.host.current;
        self.host.current = NONE;
        let transaction = self.transactions[index as usize];
        if transaction.write {
            let slot = &mut self.slots[transaction.slot as usize];
            slot.host_pending -= 1;
            if slot.host_pending == 0 && slot.early {
                self.report(at, transaction.slot);
            }
            let die = transaction.die;
            self.dies[die as usize].queue.push(&mut self.transactions, index);
            self.try_start_die(at, die);
        } else {
            self.end_transaction(at, index);
        }
        self.try_start_host(at);
    }

    fn end_transaction(&mut self, at: u64, index: u32) {
        self.free_transactions.push(index);
        let slot_index = self.transactions[index as usize].slot;
        let slot = &mut self.slots[slot_index as usize];
        slot.transactions_pending -= 1;
        if slot.transactions_pending > 0 {
            return;
        }
        let Slot { early, order, .. } = *slot;
        self.finish_command(at, slot_index);
        if early {
            self.end_transaction_release_flushes(at, order);
        }
    }

    /// A cached write ordered `order` is on flash: flushes ordered after it wait for one fewer.
    fn end_transaction_release_flushes(&mut self, at: u64, order: u64) {
        let mut position = 0;
        while position < self.flushes_waiting.len() {
            let flush = self.flushes_waiting[position];
            let entry = &mut self.slots[flush as usize];
            if entry.order > order {
                entry.writes_awaited -= 1;
                if entry.writes_awaited == 0 {
                    self.flushes_waiting.remove(position);
                    self.finish_command(at, flush);
                    continue;
                }
            }
            position += 1;
        }
    }

    /// The command is done with the device: hand it back (unless a cached write already was)
    /// and free its slot.
    fn finish_command(&mut self, at: u64, slot: u32) {
        if !self.slots[slot as usize].reported {
            self.report(at, slot);
        }
        self.slots[slot as usize].live = false;
        self.free_slots.push(slot);
    }

    fn report(&mut self, at: u64, slot: u32) {
        let entry = &mut self.slots[slot as usize];
        entry.reported = true;
        self.done.push(entry.id);
        self.stats.commands += 1;
        self.inside -= 1;
        if self.inside == 0 {
            self.stats.busy_ns += at - self.busy_since_ns;
            self.idle_since_ns = at;
        }
    }

    /// The device was idle from `idle_since_ns` to `now_ns`: the SLC cache folded into TLC at
    /// `slc_fold_bytes_per_s` meanwhile, freeing that much of it.
    fn fold_while_idle(&mut self, now_ns: u64) {
        let used = self.slc_cache_bytes - self.slc_free_bytes;
        if used == 0 {
            return;
        }
        let idle_ns = now_ns.saturating_sub(self.idle_since_ns);
        let folded = u128::from(idle_ns) * u128::from(self.slc_fold_bytes_per_s) / 1_000_000_000;
        self.slc_free_bytes += u64::try_from(folded).unwrap_or(u64::MAX).min(used);
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{ComponentSpec, Prng, Sector};

    use crate::device::{DeviceSpec, Probe, Timed, iops, throughput_bytes_per_s};

    use super::*;

    /// The model a spec builds, for reading its parameters.
    fn model(text: &str) -> Ssd {
        let spec = ComponentSpec::parse("device", text).unwrap();
        let preset = PRESETS.iter().find(|preset| preset.name == spec.name).unwrap_or(&PRESETS[0]);
        Ssd::from_params(&Params::resolve(&spec, KEYS, preset.values).unwrap()).unwrap()
    }

    fn probe(text: &str) -> Probe {
        Probe::new(DeviceSpec::parse(text).unwrap().build().unwrap())
    }

    fn seconds(nanos: u64) -> f64 {
        nanos as f64 / 1e9
    }

    fn latency_ns(timed: &Timed) -> u64 {
        (timed.finished - timed.submitted).as_nanos()
    }

    /// `count` aligned random reads or writes of `sectors` over the whole device.
    fn random(ssd: &Ssd, op: Op, sectors: u32, count: usize, seed: u64) -> Vec<(Op, Sector, u32)> {
        let mut prng = Prng::new(seed);
        let slots = ssd.capacity_sectors / u64::from(sectors);
        (0..count).map(|_| (op, Sector(prng.below(slots) * u64::from(sectors)), sectors)).collect()
    }

    fn sequential(op: Op, sectors: u32, count: u64) -> Vec<(Op, Sector, u32)> {
        (0..count).map(|i| (op, Sector(i * u64::from(sectors)), sectors)).collect()
    }

    fn assert_near(measured: f64, expected: f64, tolerance: f64, what: &str) {
        let error = measured / expected - 1.0;
        assert!(
            error.abs() <= tolerance,
            "{what}: measured {measured:.1}, expected {expected:.1} ({:+.2} %, allowed {:.1} %)",
            error * 100.0,
            tolerance * 100.0
        );
    }

    // Proves the QD1 read latency of devices.md 2.4 — cmd + t_R + t_x + host transfer — to the
    // nanosecond on every preset, by running one 4 KiB read on an idle device and summing the
    // preset's own times (transfers rounded up to whole nanoseconds, as the model does).
    #[test]
    fn qd1_read_latency_is_command_sense_channel_and_link() {
        for preset in [
            "sata-ssd",
            "nvme",
            "agrawal-slc-2008",
            "nvme-gen4-consumer",
            "nvme-gen3-dc",
            "sata-ssd-2021",
        ] {
            let ssd = model(preset);
            let expected = ssd.command_ns
                + ssd.read_ns
                + 4096_u64.saturating_mul(1_000_000_000).div_ceil(ssd.channel_bytes_per_s)
                + 4096_u64.saturating_mul(1_000_000_000).div_ceil(ssd.host_bytes_per_s);
            let run = probe(preset).closed_loop([(Op::Read, Sector(8 * 1000), 8)], 1);
            assert_eq!(latency_ns(&run[0]), expected, "{preset}");
        }
        // The MQSim figure of devices.md 2.4 (75 + 24.6 + ~2 us for a full 8 KiB page).
        let run = probe("nvme:command_time=0").closed_loop([(Op::Read, Sector(0), 16)], 1);
        assert_near(latency_ns(&run[0]) as f64, 75_000.0 + 24_600.0 + 2_048.0, 0.02, "8 KiB");
    }

    // Proves the acceptance number of the issue: 4 KiB random reads at full depth on the MQSim
    // device run at min(die-bound, bus-bound, host-bound) of devices.md 2.4 within 10 % — the
    // bus-bound C·B/4 KiB ≈ 650 k IOPS — by running 100,000 uniformly random aligned reads at
    // depth 1024. The die-bound term is C·D/(t_R + t_x): a die holds its data until the channel
    // has taken it, and single-page reads use one plane.
    #[test]
    fn nvme_random_read_iops_is_bus_bound() {
        let ssd = model("nvme");
        let (c, d) = (f64::from(ssd.channel_count), f64::from(ssd.dies_per_channel));
        let unit = 4096.0;
        let transfer_s = unit / ssd.channel_bytes_per_s as f64;
        let die_bound = c * d / (seconds(ssd.read_ns) + transfer_s);
        let bus_bound = c * ssd.channel_bytes_per_s as f64 / unit;
        let host_bound = ssd.host_bytes_per_s as f64 / unit;
        let expected = die_bound.min(bus_bound).min(host_bound);
        assert_eq!(expected, bus_bound, "the MQSim device is bus-bound for 4 KiB reads");
        assert_near(expected, 650_000.0, 0.01, "devices.md 2.4 quotes about 650 k IOPS");
        let mut probe = probe("nvme");
        let run = probe.closed_loop(random(&ssd, Op::Read, 8, 100_000, 1), ssd.depth);
        assert_near(iops(&run), expected, 0.10, "random 4 KiB read IOPS");
        assert!(iops(&run) <= expected * 1.001, "no faster than the bound");

        // Large sequential reads stream at the bus rate too (C·B < H and below the die bound).
        let mut probe = crate::device::Probe::new(Box::new(model("nvme")));
        let run = probe.closed_loop(sequential(Op::Read, 2048, 2000), 64);
        let bus_bytes = c * ssd.channel_bytes_per_s as f64;
        assert_near(throughput_bytes_per_s(&run), bus_bytes, 0.05, "1 MiB sequential reads");
    }

    // Proves the sequential-write bound of devices.md 2.4 on a fresh drive and its division by
    // WA in steady state, by streaming 1 MiB writes (one full stripe: every die programs both
    // planes at once) at depth 32. The program-bound term carries the channel load that holds
    // the die, C·D·P·S / (t_PROG + P·S/B); the plain C·D·P·S/t_PROG of 2.4 is checked at 10 %.
    // Steady state: each program holds its die for t_PROG·WA + t_R·(WA−1) + t_ERASE·WA/N with
    // WA = (1+op)/(2·op), which slows writes by a little more than WA.
    #[test]
    fn sequential_write_bandwidth_is_program_bound_and_divided_by_wa() {
        let fresh = model("nvme");
        let (c, d, p) = (
            f64::from(fresh.channel_count),
            f64::from(fresh.dies_per_channel),
            f64::from(fresh.planes_per_die),
        );
        let page = fresh.page_size_bytes as f64;
        let channel = fresh.channel_bytes_per_s as f64;
        let load_s = p * page / channel;
        let bound = |program_s: f64| {
            (c * d * p * page / (program_s + load_s))
                .min(c * channel)
                .min(fresh.host_bytes_per_s as f64)
        };
        let stripe_sectors = (c * d * p * page) as u32 / 512;
        let writes = || sequential(Op::Write, stripe_sectors, 1000);

        let expected_fresh = bound(seconds(fresh.program_ns));
        let run = Probe::new(Box::new(model("nvme"))).closed_loop(writes(), 32);
        let fresh_rate = throughput_bytes_per_s(&run);
        assert_near(fresh_rate, expected_fresh, 0.05, "fresh sequential writes");
        let plain = (c * d * p * page / seconds(fresh.program_ns)).min(c * channel);
        assert_near(fresh_rate, plain, 0.10, "the plain formula of devices.md 2.4");

        let steady = model("nvme:gc=1");
        let op = 0.07;
        let wa = (1.0 + op) / (2.0 * op);
        assert!((steady.write_amplification - wa).abs() < 1e-12);
        let charge_s = seconds(steady.program_ns) * wa
            + seconds(steady.read_ns) * (wa - 1.0)
            + seconds(steady.erase_ns) * wa / steady.pages_per_block as f64;
        let run = Probe::new(Box::new(model("nvme:gc=1"))).closed_loop(writes(), 32);
        let steady_rate = throughput_bytes_per_s(&run);
        assert_near(steady_rate, bound(charge_s), 0.05, "steady-state sequential writes");
        let slowdown = fresh_rate / steady_rate;
        assert!(slowdown > wa && slowdown < wa * 1.15, "slowdown {slowdown:.2} vs WA {wa:.2}");
    }

    // Proves Little's law on the MQSim device: 4 KiB random-read IOPS at depth q stay under
    // min(q/L_min, IOPS_peak), rise with q, follow q/L_min well below q* = IOPS_peak·L_min
    // (about 60) and reach the peak within 15 % at 4·q* and 10 % at 8·q*, by running 50,000
    // reads at each depth from 1 to 512 (enough that filling and draining the queue do not
    // matter).
    #[test]
    fn iops_follow_littles_law() {
        let ssd = model("nvme");
        let transfer = |rate: u64| 4096_u64 * 1_000_000_000 / rate;
        let latency_min = seconds(
            ssd.command_ns
                + ssd.read_ns
                + transfer(ssd.channel_bytes_per_s)
                + transfer(ssd.host_bytes_per_s),
        );
        let peak = f64::from(ssd.channel_count) * ssd.channel_bytes_per_s as f64 / 4096.0;
        let knee = peak * latency_min;
        assert!((50.0..70.0).contains(&knee), "q* = {knee}");
        let mut previous = 0.0;
        for depth in [1_u32, 2, 4, 8, 16, 32, 64, 128, 256, 512] {
            let mut probe = probe("nvme");
            let rate = iops(
                &probe.closed_loop(random(&ssd, Op::Read, 8, 50_000, u64::from(depth)), depth),
            );
            let bound = (f64::from(depth) / latency_min).min(peak);
            assert!(rate <= bound * 1.01, "depth {depth}: {rate:.0} above {bound:.0}");
            assert!(rate >= previous * 0.99, "depth {depth}: {rate:.0} fell from {previous:.0}");
            if depth == 1 {
                assert_near(rate, 1.0 / latency_min, 0.01, "QD1");
            }
            if f64::from(depth) < knee / 4.0 {
                assert_near(rate, bound, 0.10, "well below the knee: latency-bound");
            }
            // Random reads pile up unevenly on channels, so the curve bends over gradually.
            if f64::from(depth) >= knee * 4.0 {
                assert_near(rate, peak, 0.15, "past the knee: near saturation");
            }
            if f64::from(depth) >= knee * 8.0 {
                assert_near(rate, peak, 0.10, "well past the knee: saturated");
            }
            previous = rate;
        }
    }

    // Proves the per-package numbers of Agrawal et al. (devices.md 2.3) on the
    // `agrawal-slc-2008` preset: one die reads at 1/(t_R + t_x) = 8,000 IOPS and writes at
    // 1/(t_x + t_PROG) ≈ 3,330 IOPS; with two dies reads are bus-bound at 1/t_x = 10,000 IOPS
    // (40 MB/s) and writes interleave to min(2/(t_x + t_PROG), 1/t_x) ≈ 6,670 IOPS, by
    // streaming 4 KiB commands at depth 8 over consecutive pages (which alternate dies).
    #[test]
    fn agrawal_package_bandwidths() {
        let ssd = model("agrawal-slc-2008");
        let read_s = seconds(ssd.read_ns);
        let program_s = seconds(ssd.program_ns);
        let transfer_s = 4096.0 / ssd.channel_bytes_per_s as f64;
        assert_near(1.0 / (read_s + transfer_s), 8_000.0, 0.001, "the paper's read figure");
        assert_near(1.0 / (program_s + transfer_s), 3_330.0, 0.002, "the paper's write figure");
        let run = |spec: &str, op| iops(&probe(spec).closed_loop(sequential(op, 8, 4000), 8));

        assert_near(run("agrawal-slc-2008", Op::Read), 1.0 / (read_s + transfer_s), 0.01, "1 die");
        assert_near(
            run("agrawal-slc-2008", Op::Write),
            1.0 / (program_s + transfer_s),
            0.01,
            "1 die writes",
        );
        let two_dies = "agrawal-slc-2008:dies=2";
        let reads = run(two_dies, Op::Read);
        assert_near(reads, (2.0 / (read_s + transfer_s)).min(1.0 / transfer_s), 0.01, "2 dies");
        assert_near(reads * 4096.0, 40.96e6, 0.01, "40 MB/s");
        let writes = run(two_dies, Op::Write);
        let expected = (2.0 / (program_s + transfer_s)).min(1.0 / transfer_s);
        assert_near(writes, expected, 0.01, "2 dies writes");
    }

    // Proves the mapping and the contention rules by timing pairs of 4 KiB reads submitted
    // together: pages 0 and 1 sit on different channels and finish together (only the link
    // separates them); pages 0 and C share a channel, so the second waits one channel
    // transfer; pages 0 and C·D share a die (other plane), so the second waits a sense and a
    // transfer. A 4-plane read of one die's consecutive pages takes one sense.
    #[test]
    fn mapping_spreads_channels_first_and_contends_for_buses_and_dies() {
        let ssd = model("nvme");
        let page = ssd.page_sectors();
        let channel_ns = transfer_ns(4096, ssd.channel_bytes_per_s);
        let host_ns = transfer_ns(4096, ssd.host_bytes_per_s);
        let solo = ssd.command_ns + ssd.read_ns + channel_ns + host_ns;
        let pair = |second_page: u64| {
            let run = probe("nvme").closed_loop(
                [(Op::Read, Sector(0), 8), (Op::Read, Sector(second_page * page), 8)],
                2,
            );
            (latency_ns(&run[0]), latency_ns(&run[1]))
        };
        let c = u64::from(ssd.channel_count);
        let d = u64::from(ssd.dies_per_channel);
        assert_eq!(pair(1), (solo, solo + host_ns), "different channels");
        assert_eq!(pair(c), (solo, solo + channel_ns), "one channel, two dies");
        assert_eq!(pair(c * d), (solo, solo + ssd.read_ns + channel_ns), "one die");

        let slc = model("agrawal-slc-2008");
        let planes = u64::from(slc.planes_per_die);
        let run = probe("agrawal-slc-2008").closed_loop([(Op::Read, Sector(0), 8 * 4)], 1);
        let bytes = planes * 4096;
        let expected = slc.read_ns
            + transfer_ns(bytes, slc.channel_bytes_per_s)
            + transfer_ns(bytes, slc.host_bytes_per_s);
        assert_eq!(latency_ns(&run[0]), expected, "one multi-plane sense");
    }

    // Proves the write cache: a cached write finishes after its host transfer, and a flush
    // behind it finishes when the page is programmed (host + channel load + t_PROG after the
    // write's command time); with the cache off the write itself takes that long.
    #[test]
    fn write_cache_finishes_writes_early_and_flushes_wait_for_programs() {
        let ssd = model("nvme");
        let host_ns = transfer_ns(4096, ssd.host_bytes_per_s);
        let programmed =
            ssd.command_ns + host_ns + transfer_ns(4096, ssd.channel_bytes_per_s) + ssd.program_ns;
        let script = [(Op::Write, Sector(0), 8), (Op::Flush, Sector(0), 0)];
        let mut cached = probe("nvme:write_cache=1");
        let run = cached.closed_loop(script, 1);
        assert_eq!(latency_ns(&run[0]), ssd.command_ns + host_ns);
        assert_eq!(run[1].finished.as_nanos(), programmed);
        let run = probe("nvme").closed_loop(script, 1);
        assert_eq!(latency_ns(&run[0]), programmed);
        assert_eq!(latency_ns(&run[1]), ssd.command_ns, "nothing volatile to flush");

        // A cache of one multi-plane write stalls a deep stream of writes behind the programs:
        // the stream is then as slow as without a cache.
        let writes = || random(&ssd, Op::Write, 8, 2000, 7);
        let small = iops(&probe("nvme:write_cache=1,cache_size=16k").closed_loop(writes(), 64));
        let none = iops(&probe("nvme").closed_loop(writes(), 64));
        assert!(small <= none * 1.05, "{small} vs {none}");
        let mut large = probe("nvme:write_cache=1");
        let fast = iops(&large.closed_loop(writes(), 64));
        assert!(fast > none * 10.0, "a large cache absorbs the burst: {fast} vs {none}");
        large.settle();
        let stats = large.device().stats();
        assert_eq!(extra(&stats, "pages_programmed"), 2000);
    }

    // Proves the SLC cache's bookkeeping: exactly `slc_cache` bytes go in SLC mode; writes
    // right after it is full go to TLC; an idle spell of t frees t x the fold rate (all dies
    // and planes sensing and programming a page in t_R + t_PROG) and that many bytes of the
    // next writes go in SLC mode again; a longer spell frees no more than the cache.
    #[test]
    fn slc_cache_fills_then_folds_back_while_idle() {
        let spec = "nvme-gen4-consumer:slc_cache=64m";
        let ssd = model(spec);
        let page = ssd.page_size_bytes;
        let fold = ssd.die_count as f64 * ssd.planes_per_die as f64 * page as f64
            / seconds(ssd.read_ns + ssd.program_ns);
        assert_eq!(ssd.slc_fold_bytes_per_s, fold as u64);
        let slc = |probe: &Probe| extra(&probe.device().stats(), "slc_pages");
        let mut probe = probe(spec);
        let batch = |start: u64| {
            sequential(Op::Write, 2048, 64)
                .into_iter()
                .map(move |(op, at, n)| (op, Sector(at.0 + start), n))
        };
        probe.closed_loop(batch(0), 32);
        assert_eq!(slc(&probe), (64 << 20) / page, "the whole cache, no more");
        probe.closed_loop(batch(1 << 17), 32);
        assert_eq!(slc(&probe), (64 << 20) / page, "no idle time: all TLC");
        probe.settle();
        let idle = Duration::from_millis(10);
        probe.now += idle;
        probe.closed_loop(batch(2 << 17), 32);
        let folded =
            (idle.as_nanos() as u128 * u128::from(ssd.slc_fold_bytes_per_s) / 1_000_000_000) as u64;
        assert_eq!(slc(&probe), (64 << 20) / page + folded / page, "10 ms of folding");
        probe.settle();
        probe.now += Duration::from_secs(10);
        probe.closed_loop(batch(3 << 17), 32);
        let total = (64 << 20) / page + folded / page + (64 << 20) / page;
        assert_eq!(slc(&probe), total, "a long spell refills the cache, no more");
    }

    fn extra(stats: &DeviceStats, name: &str) -> u64 {
        stats.extra.iter().find(|(key, _)| *key == name).map(|&(_, value)| value).unwrap()
    }

    // Proves the counters: pages, operations and the derived GC pages and erases match a
    // known script (8 single-page reads, one 16-page write = 16 programs on 16 dies, a
    // discard), and busy time spans first submission to last completion.
    #[test]
    fn stats_count_pages_operations_and_gc() {
        let ssd = model("nvme:gc=1");
        let mut probe = Probe::new(Box::new(model("nvme:gc=1")));
        let mut script = sequential(Op::Read, 16, 8);
        script.push((Op::Write, Sector(0), 16 * 16));
        script.push((Op::Discard, Sector(0), 16));
        let run = probe.closed_loop(script, 4);
        let stats = probe.device().stats();
        assert_eq!(stats.commands, 10);
        assert_eq!(stats.sectors_read, 8 * 16);
        assert_eq!(stats.sectors_written, 256);
        assert_eq!(stats.seek_distance_sectors, 0);
        assert_eq!(extra(&stats, "pages_read"), 8);
        assert_eq!(extra(&stats, "read_operations"), 8);
        assert_eq!(extra(&stats, "pages_programmed"), 16);
        assert_eq!(extra(&stats, "program_operations"), 16);
        let wa = ssd.write_amplification;
        assert_eq!(extra(&stats, "gc_pages"), (16.0 * (wa - 1.0)).floor() as u64);
        assert_eq!(extra(&stats, "erases"), (16.0 * wa / 256.0).floor() as u64);
        assert_eq!(extra(&stats, "discards"), 1);
        let end = run.iter().map(|timed| timed.finished).max().unwrap();
        assert_eq!(stats.busy_ns, end.as_nanos());
        let fresh = Probe::new(Box::new(model("nvme")));
        assert_eq!(extra(&fresh.device().stats(), "erases"), 0);
    }

    // Proves determinism: the same mixed script (random reads and writes of 4 KiB to 256 KiB,
    // flushes, discards) on a device with a write cache and GC gives identical times and
    // counters twice, and every command comes back exactly once.
    #[test]
    fn same_script_same_times() {
        let spec = "nvme:write_cache=1,cache_size=4m,gc=1";
        let ssd = model(spec);
        let script = || {
            let mut prng = Prng::new(42);
            (0..20_000)
                .map(|i| {
                    let sectors = 8 << prng.below(6);
                    let start = prng.below(ssd.capacity_sectors / 512) * 512;
                    match i % 50 {
                        0 => (Op::Flush, Sector(0), 0),
                        1 => (Op::Discard, Sector(start), sectors as u32),
                        _ if prng.chance(0.4) => (Op::Write, Sector(start), sectors as u32),
                        _ => (Op::Read, Sector(start + 3), sectors as u32),
                    }
                })
                .collect::<Vec<_>>()
        };
        let run = |_: u32| {
            let mut probe = probe(spec);
            let timed = probe.closed_loop(script(), 64);
            probe.settle();
            (timed, probe.device().stats())
        };
        let (first, first_stats) = run(0);
        let (second, second_stats) = run(1);
        assert_eq!(first.len(), 20_000);
        assert_eq!(first, second);
        assert_eq!(first_stats, second_stats);
        assert_eq!(first_stats.commands, 20_000);
    }

    // Proves impossible values are refused with the key to change and what it accepts, and
    // that no spec panics.
    #[test]
    fn impossible_keys_are_refused() {
        let message = |text: &str| DeviceSpec::parse(text).unwrap_err().to_string();
        assert!(
            message("ssd:channels=0")
                .contains("channels=0 is not valid (expected an integer 1..=64)")
        );
        assert!(message("ssd:dies=65").contains("dies=65"));
        assert!(message("nvme:channel_rate=0").contains("channel_rate"));
        assert!(
            message("ssd:page_size=1000")
                .contains("page_size: 1000 bytes is not a multiple of 512")
        );
        assert!(message("ssd:capacity=1049088").contains("capacity: "));
        assert!(message("ssd:gc=1,op=0").contains("op: must be above 0 with gc=1"));
        assert!(
            message("ssd:write_amplification=3")
                .contains("write_amplification: applies only with gc=1")
        );
        assert!(message("ssd:write_cache=1,cache_size=4k").contains("cache_size:"));
        assert!(message("ssd:op=1.5").contains("op=1.5"));
        assert!(message("ssd:chanels=8").contains("has no key `chanels`"));
        assert!(DeviceSpec::parse("ssd:gc=1,op=0,write_amplification=3").is_ok());
        assert!(DeviceSpec::parse("ssd:write_cache=1,cache_size=8k").is_ok());
        let ssd = DeviceSpec::parse("ssd").unwrap();
        assert_eq!(ssd.preset().map(|preset| preset.name), Some("sata-ssd"));
        assert_eq!(ssd.build().unwrap().queue_depth(), 32);
        assert!(!ssd.build().unwrap().rotational());
        for preset in PRESETS {
            let device = DeviceSpec::parse(preset.name).unwrap().build().unwrap();
            assert!(device.describe().starts_with("ssd: "), "{}", device.describe());
        }
    }
}
