"""CPU of a new process answering a few addresses, for scripts/bench.sh's cold row.

    python3 cold-cpu.py RUNS ADDRESS_FILE -- COMMAND...

Runs COMMAND RUNS times with ADDRESS_FILE on its standard input and prints
`median_ms=… p90_ms=… runs=…`: the CPU time (user + system, from wait4's rusage) of each run.
CPU rather than wall time, so the shared machine's other load matters less; the median, so a
run that met a cold page cache or a busy core does not decide the figure.
"""
import os
import statistics
import subprocess
import sys


def main() -> None:
    runs, addresses = int(sys.argv[1]), sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    samples = []
    for _ in range(runs):
        with open(addresses, "rb") as stdin:
            child = subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.exit(f"cold-cpu.py: {command[0]} exited with {child.returncode}")
        samples.append((usage.ru_utime + usage.ru_stime) * 1000)
    samples.sort()
    print(f"median_ms={statistics.median(samples):.2f} p90_ms={samples[int(len(samples) * 0.9) - 1]:.2f} runs={runs}")


main()
