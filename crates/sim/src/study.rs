//! The classic study: the experiments administrators ran to choose among the 2.6 schedulers
//! between 2005 and 2010, as `elevator compare` re-runs them (specs/classic-study.md).
//!
//! Each experiment names the machine it ran on — a host preset and a device preset, each
//! documenting where its numbers come from — the block-queue settings it changed, and the tool
//! invocation, as workload specs. The original results are deliberately not here: what a run
//! shows comes from the schedulers and the models.

use elevator_core::{KernelVersion, ParamError};
use elevator_report::Run;
use elevator_report::model::{CONFIG_BASELINE, CONFIG_MACHINE, CONFIG_SCALE, CONFIG_TITLE};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;

use crate::device::DeviceSpec;
use crate::host::spec::HostSpec;
use crate::runner::{QueueSettings, SimConfig};

/// One experiment of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Experiment {
    /// Its id in reports and `--only`.
    pub id: &'static str,
    /// What it measures.
    pub title: &'static str,
    /// The machine, as the write-ups describe it.
    pub machine: &'static str,
    /// The device (topology) preset.
    pub device: &'static str,
    /// The host preset.
    pub host: &'static str,
    /// `read_ahead_kb` of the devices (`blockdev --setra` sectors / 2).
    pub read_ahead_kb: u32,
    /// The tool invocation.
    pub workload: &'static str,
    /// The row the experiment's table is relative to, if the write-up measured against one
    /// (RH05's Figure 1: RHEL 3's 2.4 elevator), run first.
    pub baseline: Option<Baseline>,
}

/// A baseline row: a scheduler on another kernel of the same hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Baseline {
    /// The scheduler, as a spec names it.
    pub scheduler: &'static str,
    /// The host preset it runs on (the same machine under the older kernel).
    pub host: &'static str,
    /// What the row stands for, in the table's note.
    pub label: &'static str,
}

/// The study's database experiments' baseline: RHEL 3 (2.4.21-27.EL, U4; RH05 most likely ran
/// U4 or U5, linux-2.4-elevator.md §0.2) with its one elevator, on the same server.
const RHEL3_BASELINE: Baseline = Baseline {
    scheduler: "elevator_linus",
    host: RHEL3_HOST,
    label: "RHEL 3 (2.4.21-27.EL, elevator_linus)",
};

/// The database server under RHEL 3.
const RHEL3_HOST: &str = "dbserver-2004";

/// Every experiment, in the order the study lists them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "iozone-1",
        title: "iozone throughput, 1 process: iozone -s24g -r512 -i 0 -i 1 -t 1 -+u",
        machine: "IBM x3650-class file server, 4 CPUs, 12 GB, dual 4 Gb FC to two SAN LUNs \
                  (dm-multipath failover: the array is not named), XFS, read-ahead 16386 \
                  sectors, kernel 2.6.18-194.11.4.el5 (RHEL 5.5)",
        device: "san",
        host: "fileserver-2007",
        read_ahead_kb: 8193,
        workload: "iozone:threads=1,size=24g,record=512k",
        baseline: None,
    },
    Experiment {
        id: "iozone-10",
        title: "iozone throughput, 10 processes: iozone -s24g -r512 -i 0 -i 1 -t 10 -+u",
        machine: "the same file server",
        device: "san",
        host: "fileserver-2007",
        read_ahead_kb: 8193,
        workload: "iozone:threads=10,size=24g,record=512k",
        baseline: None,
    },
    Experiment {
        id: "hdparm",
        title: "hdparm -tT on each of four IDE disks",
        machine: "desktop with four 2004 PATA disks (hda..hdd; models assumed: Maxtor \
                  DiamondMax Plus 9, Seagate Barracuda 7200.7, WD Caviar SE, Hitachi Deskstar \
                  7K250), one CPU, 1 GB",
        device: "jbod",
        host: "desktop-2004",
        read_ahead_kb: 128,
        workload: "hdparm:devices=4",
        baseline: None,
    },
    Experiment {
        id: "dd-read",
        title: "dd if=/dev/sda1 of=/dev/null bs=2M count=300",
        machine: "server with one Ultra320 SCSI disk (~90-100 MB/s), RHEL 5.0; memory and CPUs \
                  not given: 512 MB assumed (its buffered write ran at about disk speed, so its \
                  dirty limit was well below 629 MB), 2 CPUs assumed",
        device: "scsi-15k-2005",
        host: "server-2006",
        read_ahead_kb: 128,
        workload: "dd:mode=read,bs=2m,count=300",
        baseline: None,
    },
    Experiment {
        id: "dd-write",
        title: "dd if=/dev/zero of=/tmp/file bs=2M count=300",
        machine: "the same server",
        device: "scsi-15k-2005",
        host: "server-2006",
        read_ahead_kb: 128,
        workload: "dd:mode=write,bs=2m,count=300",
        baseline: None,
    },
    Experiment {
        id: "dd-copy",
        title: "dd if=/dev/sda1 of=/tmp/file bs=2M count=300",
        machine: "the same server: reads and writes on one disk",
        device: "scsi-15k-2005",
        host: "server-2006",
        read_ahead_kb: 128,
        workload: "dd:mode=copy,bs=2m,count=300",
        baseline: None,
    },
    Experiment {
        id: "oltp",
        title: "OLTP: 10 users, 4 KiB random I/O, 50 % reads, synchronous commits",
        machine: "database server, 2 CPUs with Hyper-Threading, 4 GB, 8 LUNs on an LSI \
                  MegaRAID controller, ext3, Oracle 10g (the write-up ran 2.6.9 schedulers)",
        device: "megaraid-8",
        host: "dbserver-2005",
        read_ahead_kb: 128,
        workload: "oltp:users=10,reads=50,block=4k,size=8g,runtime=60s",
        baseline: Some(RHEL3_BASELINE),
    },
    Experiment {
        id: "dss",
        title: "DSS: parallel full-table scans, 32-256 KiB sequential reads",
        machine: "the same database server",
        device: "megaraid-8",
        host: "dbserver-2005",
        read_ahead_kb: 128,
        workload: "dss:streams=4,bsrange=32k-256k,size=1g,runtime=60s",
        baseline: Some(RHEL3_BASELINE),
    },
    Experiment {
        id: "seqread-1",
        title: "one sequential reader of a file on an iSCSI-backed ZFS pool",
        machine: "a ZFS file server reading a pool of two mirror pairs of iSCSI LUNs over two \
                  gigabit links; the schedulers run on the target's four disks, behind IET's \
                  worker threads (two hosts: the initiator and the target)",
        device: "iscsi-zfs",
        host: "host",
        read_ahead_kb: 128,
        workload: "seqread:readers=1,size=4g,bs=1m",
        baseline: None,
    },
    Experiment {
        id: "seqread-2",
        title: "two sequential readers of separate files at once",
        machine: "the same file server and target",
        device: "iscsi-zfs",
        host: "host",
        read_ahead_kb: 128,
        workload: "seqread:readers=2,size=4g,bs=1m",
        baseline: None,
    },
];

/// The experiment called `id`.
pub fn experiment(id: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|experiment| experiment.id == id)
}

impl Experiment {
    /// The configuration and workload of this experiment for `seed`, every amount of data and
    /// time in the workload and the host's memory multiplied by `scale` (1.0 for the
    /// original sizes); the devices and their caches stay as they are.
    pub fn prepare(&self, seed: u64, scale: f64) -> Result<(SimConfig, WorkloadSpec), ParamError> {
        self.prepare_on(self.host, seed, scale)
    }

    /// [`Experiment::prepare`] for the row of `scheduler`: the baseline's scheduler runs on
    /// the baseline's host (the same machine under the older kernel), every other on the
    /// experiment's.
    pub fn prepare_for(
        &self,
        scheduler: &SchedulerSpec,
        seed: u64,
        scale: f64,
    ) -> Result<(SimConfig, WorkloadSpec), ParamError> {
        match self.baseline_of(scheduler) {
            Some(baseline) => self.prepare_on(baseline.host, seed, scale),
            None => self.prepare(seed, scale),
        }
    }

    /// The baseline `scheduler` is this experiment's, if it is.
    pub fn baseline_of(&self, scheduler: &SchedulerSpec) -> Option<Baseline> {
        self.baseline.filter(|baseline| scheduler.kind().name() == baseline.scheduler)
    }

    /// The rows this experiment runs for `schedulers`. Unless they were `named` by the user,
    /// the baseline comes first (the database experiments' RHEL 3 row) and a scheduler that
    /// is another experiment's baseline is left out here (it has no kernel to run on in this
    /// experiment). Named, such a scheduler is an error that says where it runs.
    pub fn rows(
        &self,
        schedulers: &[SchedulerSpec],
        named: bool,
    ) -> Result<Vec<SchedulerSpec>, String> {
        let baselines: Vec<&str> =
            EXPERIMENTS.iter().filter_map(|e| e.baseline.map(|b| b.scheduler)).collect();
        let mut rows = Vec::with_capacity(schedulers.len() + 1);
        if let Some(baseline) = self.baseline
            && !named
            && !schedulers.iter().any(|scheduler| scheduler.kind().name() == baseline.scheduler)
        {
            let scheduler = SchedulerSpec::parse(baseline.scheduler).map_err(|error| {
                format!("the baseline scheduler of experiment {}: {error}", self.id)
            })?;
            rows.push(scheduler);
        }
        for scheduler in schedulers {
            let name = scheduler.kind().name();
            let elsewhere = baselines.contains(&name) && self.baseline_of(scheduler).is_none();
            if elsewhere && !named {
                continue;
            }
            if elsewhere {
                let with: Vec<&str> = EXPERIMENTS
                    .iter()
                    .filter(|e| e.baseline.is_some_and(|b| b.scheduler == name))
                    .map(|e| e.id)
                    .collect();
                return Err(format!(
                    "{name} runs only as the baseline of {} (its kernel is not {}'s); pick \
                     those with --only",
                    with.join(", "),
                    self.id
                ));
            }
            rows.push(scheduler.clone());
        }
        Ok(rows)
    }

    fn prepare_on(
        &self,
        host: &str,
        seed: u64,
        scale: f64,
    ) -> Result<(SimConfig, WorkloadSpec), ParamError> {
        let mut config = SimConfig::new(seed, DeviceSpec::parse(self.device)?);
        let host = HostSpec::parse(host)?;
        config.host = if scale == 1.0 { host } else { host.scaled(scale)? };
        config.queue =
            QueueSettings { read_ahead_kb: self.read_ahead_kb, ..QueueSettings::default() };
        let workload = WorkloadSpec::parse(self.workload)?;
        let workload = if scale == 1.0 { workload } else { workload.scaled(scale)? };
        Ok((config, workload))
    }

    /// Marks `run` as this experiment's: its id, and its title and machine in the config,
    /// which is what the report's heading for the experiment prints. The machine is followed
    /// by the version of each classic scheduler its host's kernel runs (a RHEL 5.5 host's
    /// `cfq` is `cfq@2.6.18-194.8.1.el5`), so the heading says which profiles ran.
    pub fn stamp(&self, run: &mut Run) {
        run.experiment = Some(self.id.to_owned());
        run.config.insert(CONFIG_TITLE.to_owned(), self.title.to_owned());
        let machine = match HostSpec::parse(self.host) {
            Ok(host) => {
                let mut machine =
                    format!("{}; schedulers: {}", self.machine, kernel_schedulers(host.kernel()));
                if let Some(baseline) = self.baseline {
                    machine
                        .push_str(&format!("; baseline: {} on the same hardware", baseline.label));
                }
                machine
            }
            // `prepare` reports a bad preset; the heading then names the machine alone.
            Err(_) => self.machine.to_owned(),
        };
        run.config.insert(CONFIG_MACHINE.to_owned(), machine);
        if let Some(baseline) = self.baseline
            && run.scheduler.split('@').next() == Some(baseline.scheduler)
        {
            run.config.insert(CONFIG_BASELINE.to_owned(), baseline.label.to_owned());
        }
    }
}

/// The version of each classic (2.6) scheduler a host running `kernel` runs for its bare name,
/// as `name@version`: `noop@2.6.18, anticipatory@2.6.18, deadline@2.6.18-194.el5,
/// cfq@2.6.18-194.8.1.el5` on 2.6.18-194.11.4.el5.
pub fn kernel_schedulers(kernel: KernelVersion) -> String {
    SchedulerKind::LEGACY
        .iter()
        .map(|kind| {
            let picked = kind.for_kernel(kernel);
            format!("{}@{}", picked.name(), picked.kernel_version())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records in `run` that it ran at `scale` (see [`Experiment::prepare`]); at full size (1.0)
/// nothing is recorded, so full-size reports stay as they always were.
pub fn stamp_scale(run: &mut Run, scale: f64) {
    if scale != 1.0 {
        run.config.insert(CONFIG_SCALE.to_owned(), scale.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the study's machines run the schedulers their kernels shipped (host-mechanisms.md
    // §7.2): the iozone file server (2.6.18-194.11.4.el5) RHEL 5.5's deadline and 194.8.1.el5's
    // cfq, the dd server (2.6.18-8.el5) vanilla 2.6.18's, the database server (RHEL 4) 2.6.9's
    // cfq and noop (what `stamp` appends to the heading's machine line).
    #[test]
    fn each_machine_names_the_scheduler_versions_its_kernel_runs() {
        let schedulers = |id: &str| {
            let host = HostSpec::parse(experiment(id).unwrap().host).unwrap();
            kernel_schedulers(host.kernel())
        };
        assert_eq!(
            schedulers("iozone-1"),
            "noop@2.6.18, anticipatory@2.6.18, deadline@2.6.18-194.el5, cfq@2.6.18-194.8.1.el5"
        );
        assert_eq!(schedulers("iozone-10"), schedulers("iozone-1"));
        assert_eq!(
            schedulers("dd-read"),
            "noop@2.6.18, anticipatory@2.6.18, deadline@2.6.18, cfq@2.6.18"
        );
        assert_eq!(
            schedulers("oltp"),
            "noop@2.6.9, anticipatory@2.6.18, deadline@2.6.18, cfq@2.6.9"
        );
    }

    // Proves the database experiments' baseline: elevator_linus runs on the RHEL 3 server (the
    // same hardware under 2.4.21-27.EL), every other scheduler on the RHEL 4 one, and only the
    // baseline's run is stamped as the one the table is relative to.
    #[test]
    fn the_database_baseline_runs_rhel3_on_the_same_hardware() {
        let oltp = experiment("oltp").unwrap();
        let linus = SchedulerSpec::parse("elevator_linus").unwrap();
        let deadline = SchedulerSpec::parse("deadline").unwrap();
        let (baseline, _) = oltp.prepare_for(&linus, 1, 0.01).unwrap();
        let (other, _) = oltp.prepare_for(&deadline, 1, 0.01).unwrap();
        assert_eq!(baseline.host.kernel(), KernelVersion::Rhel3);
        assert_eq!(other.host.kernel(), KernelVersion::Rhel4);
        assert_eq!(baseline.device, other.device);
        assert!(experiment("iozone-1").unwrap().baseline_of(&linus).is_none());
        let (config, workload) = experiment("dss").unwrap().prepare_for(&linus, 1, 0.01).unwrap();
        let mut run = crate::run(&config, &linus, &workload).unwrap();
        experiment("dss").unwrap().stamp(&mut run);
        assert!(run.config[CONFIG_BASELINE].contains("RHEL 3"));
        let (config, workload) =
            experiment("dss").unwrap().prepare_for(&deadline, 1, 0.01).unwrap();
        let mut run = crate::run(&config, &deadline, &workload).unwrap();
        experiment("dss").unwrap().stamp(&mut run);
        assert!(!run.config.contains_key(CONFIG_BASELINE));
    }

    // Proves a stamped run carries the experiment's id, title and machine, and the scale only
    // when the study was scaled down.
    #[test]
    fn stamps_name_the_experiment_and_a_scale_below_one() {
        let experiment = experiment("dd-read").unwrap();
        let (config, workload) = experiment.prepare(1, 0.01).unwrap();
        let scheduler = elevator_sched::SchedulerSpec::parse("noop").unwrap();
        let mut run = crate::run(&config, &scheduler, &workload).unwrap();
        assert_eq!(run.experiment, None);
        experiment.stamp(&mut run);
        stamp_scale(&mut run, 1.0);
        assert_eq!(run.experiment.as_deref(), Some("dd-read"));
        assert_eq!(run.config[CONFIG_TITLE], experiment.title);
        assert_eq!(
            run.config[CONFIG_MACHINE],
            format!(
                "{}; schedulers: noop@2.6.18, anticipatory@2.6.18, deadline@2.6.18, cfq@2.6.18",
                experiment.machine
            )
        );
        assert!(!run.config.contains_key(CONFIG_SCALE));
        stamp_scale(&mut run, 0.01);
        assert_eq!(run.config[CONFIG_SCALE], "0.01");
    }

    // Proves the dd server's memory gives a dirty limit well below dd's 629 MB write (the
    // write-up's write ran at about the disk's speed, so it was throttled for most of it),
    // where the 2 GiB once assumed allowed more dirty data than the write holds.
    #[test]
    fn the_dd_servers_dirty_limit_is_below_its_write() {
        let dirty_limit_bytes = |host: &str| {
            let spec = HostSpec::parse(host).unwrap();
            let host = crate::host::Host::new(&spec, Vec::new(), &[]).unwrap();
            host.dirty_limit_pages() * crate::host::cache::PAGE_BYTES
        };
        let write_bytes = 300 * 2 * 1024 * 1024;
        let server = experiment("dd-write").unwrap().host;
        let limit = dirty_limit_bytes(server);
        assert!(limit > 0 && limit * 4 < write_bytes, "{server}: dirty limit {limit} B");
        assert!(dirty_limit_bytes("host:ram=2g,reserve=256m") > write_bytes);
    }

    // Proves every experiment's machine and tool parse, at full size and scaled down.
    #[test]
    fn every_experiment_is_well_formed() {
        for experiment in EXPERIMENTS {
            experiment.prepare(1, 1.0).unwrap_or_else(|e| panic!("{}: {e}", experiment.id));
            let (config, scaled) = experiment.prepare(1, 0.05).unwrap();
            assert_ne!(scaled.to_string(), experiment.workload, "{} did not scale", experiment.id);
            // The page cache shrinks with the files, so their ratio holds.
            let ram = |host: &HostSpec| host.params.size("ram") as f64;
            let full = HostSpec::parse(experiment.host).unwrap();
            let ratio = ram(&config.host) / ram(&full);
            assert!(
                (ratio - 0.05).abs() < 0.01 || ram(&config.host) == 64.0 * 1048576.0,
                "{}",
                experiment.id
            );
        }
        let ids: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
        assert_eq!(
            ids,
            [
                "iozone-1",
                "iozone-10",
                "hdparm",
                "dd-read",
                "dd-write",
                "dd-copy",
                "oltp",
                "dss",
                "seqread-1",
                "seqread-2"
            ]
        );
    }
}
