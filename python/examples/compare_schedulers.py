"""Compare schedulers for one workload, notebook style: run, tabulate, plot.

    MPLBACKEND=Agg python compare_schedulers.py [OUT.png]
"""

# %% Setup
import sys

import matplotlib.pyplot as plt

import elevator

OUT = sys.argv[1] if len(sys.argv) > 1 else "compare_schedulers.png"

# %% Two sequential readers far apart plus a random reader on a 2005 desktop disk: the case
# where anticipation and CFQ's idling pay off and noop seeks back and forth.
WORKLOAD = ("job:rw=read,bs=64k,numjobs=2,offset_increment=100g,size=16m")
SCHEDULERS = ["noop", "deadline", "anticipatory", "cfq", "bfq", "mq-deadline"]
report = elevator.sim(device="hdd", workload=WORKLOAD, schedulers=SCHEDULERS, seed=1)
df = report.to_pandas()

# %% One row per scheduler: throughput of the phase and why (seeks, idling).
summary = df.groupby("scheduler", sort=False).agg(
    mb_per_s=("phase_throughput_bytes_per_s", lambda s: s.iloc[0] / 1e6),
    p99_ms=("phase_latency_ns_p99", lambda s: s.iloc[0] / 1e6),
    seek_mean_sectors=("seek_distance_mean_sectors", "first"),
    idle_ms=("idle_ns", lambda s: s.iloc[0] / 1e6),
)
print(summary.to_string())

# %% Plot: throughput, with the mean seek distance that explains it.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.bar(summary.index, summary["mb_per_s"], color="tab:blue")
left.set_ylabel("MB/s (10^6 B/s)")
left.set_title("Throughput")
right.bar(summary.index, summary["seek_mean_sectors"], color="tab:orange")
right.set_ylabel("mean seek (sectors)")
right.set_title("Why: head movement per request")
for axis in (left, right):
    axis.tick_params(axis="x", rotation=30)
fig.suptitle(f"{WORKLOAD} on hdd")
fig.tight_layout()
fig.savefig(OUT, dpi=100)
print(f"wrote {OUT}")
