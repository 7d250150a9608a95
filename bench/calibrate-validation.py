#!/usr/bin/env python3
"""Calibrated device model against live runs (issue 21, docs/validation.md).

Creates two loop devices (over a RAM file in /dev/shm and over a file on disk in /var/tmp,
both --direct-io=on), calibrates each with `elevator calibrate --quick --write --force`
(the devices are this script's own, so writing them is what was asked), then for each
fio-like job runs it in the simulator on the preset and live on the device (the median of
five runs by IOPS), measures the live side a second time (the machine's own noise), and
prints a Markdown table of the model's IOPS and p50/p99 errors beside the live-vs-live one.
Removes the loop devices and files on every exit. Needs root.

Usage: sudo bench/calibrate-validation.py [ELEVATOR_BINARY]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

ELEVATOR = sys.argv[1] if len(sys.argv) > 1 else "target/release/elevator"
SIZE = 256 << 20
JOBS = [
    ("randread 4k QD1", "rw=randread,bs=4k,iodepth=1"),
    ("randread 4k QD16", "rw=randread,bs=4k,iodepth=16"),
    ("seqread 1M QD1", "rw=read,bs=1m,iodepth=1"),
    ("randwrite 4k QD1", "rw=randwrite,bs=4k,iodepth=1"),
    ("randwrite 4k QD16", "rw=randwrite,bs=4k,iodepth=16"),
]
RUNTIME = "runtime=300ms,time_based=1"


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def phase(report):
    p = json.loads(report)["runs"][0]["phases"][0]
    return p["iops"], p["latency_ns"]["p50"], p["latency_ns"]["p99"]


def live(device, job, write):
    runs = []
    for _ in range(5):
        args = [ELEVATOR, "run", "--target", device, "-w", f"job:{job},{RUNTIME}", "-s", "none",
                "--format", "json"]
        if write:
            args.append("--force")
        runs.append(phase(run(*args)))
    runs.sort()
    return runs[2]


def sim(preset, job, max_sectors_kb):
    # The device's request limit, as calibrate advises: the simulator splits at 512 KiB
    # otherwise.
    return phase(run(ELEVATOR, "sim", "-d", preset, "-w", f"job:{job},{RUNTIME}", "-s", "none",
                     "--max-sectors-kb", max_sectors_kb, "--format", "json"))


def err(model, real):
    return f"{(model / real - 1) * 100:+.0f} %"


def main():
    work = tempfile.mkdtemp(prefix="calib-", dir="/var/tmp")
    backings = {"RAM file (/dev/shm)": "/dev/shm/elevator-calib-ram.img",
                "disk file (/var/tmp, ext4 on virtio)": os.path.join(work, "disk.img")}
    devices = []
    try:
        for name, backing in backings.items():
            with open(backing, "wb") as f:
                # Real blocks, not holes: reads of holes skip the medium.
                chunk = b"\0" * (1 << 20)
                for _ in range(SIZE >> 20):
                    f.write(chunk)
            device = run("losetup", "--find", "--show", "--direct-io=on", backing).strip()
            devices.append(device)
            preset = os.path.join(work, f"{os.path.basename(device)}.toml")
            run(ELEVATOR, "--quiet", "calibrate", device, "--quick", "--write", "--force",
                "-o", preset)
            with open(preset) as f:
                lines = f.readlines()
            stated = [line for line in lines if line.startswith(("error_percent", "rotational"))]
            max_sectors_kb = next(line.split("=")[1].strip() for line in lines
                                  if line.startswith("sysfs_max_sectors_kb"))
            print(f"\n### {name}: {device}; {' '.join(s.strip() for s in stated)}\n")
            print("| job | live IOPS | model IOPS | IOPS error | live again | live vs live "
                  "| live p50 µs | model p50 µs | p50 error | live p99 µs | model p99 µs "
                  "| p99 error |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for label, job in JOBS:
                real = live(device, job, "write" in job)
                model = sim(preset, job, max_sectors_kb)
                # The same live measurement again: the machine's own run-to-run noise,
                # against which the model's error must be read.
                again = live(device, job, "write" in job)
                print(f"| {label} | {real[0]:.0f} | {model[0]:.0f} | {err(model[0], real[0])} "
                      f"| {again[0]:.0f} | {err(again[0], real[0])} "
                      f"| {real[1] / 1e3:.1f} | {model[1] / 1e3:.1f} | {err(model[1], real[1])} "
                      f"| {real[2] / 1e3:.1f} | {model[2] / 1e3:.1f} | {err(model[2], real[2])} |")
    finally:
        for device in devices:
            subprocess.run(["losetup", "-d", device], check=False)
        for backing in backings.values():
            if os.path.exists(backing):
                os.remove(backing)
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
