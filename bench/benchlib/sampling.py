"""CPU and memory of processes, from /proc: what a bench reads before and after a run, and
what its results file says about the machine."""
import datetime
import os
import platform

CLK_TCK = os.sysconf("SC_CLK_TCK")


def read_stat(pid):
    """(ppid, utime+stime ticks) or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime/stime are fields 14/15.
    return int(rest[1]), int(rest[11]) + int(rest[12])


def system_ticks(pids):
    """Kernel-mode (stime) ticks of `pids` so far: the part of cpu_ticks spent in syscalls and
    the network stack on the processes' behalf."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                data = f.read()
        except OSError:
            continue
        total += int(data[data.rindex(")") + 2:].split()[12])
    return total


def cpu_ticks(pids):
    total = 0
    for p in pids:
        st = read_stat(p)
        if st:
            total += st[1]
    return total


def vm_hwm_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def machine_busy_ticks():
    """Busy CPU ticks of the whole machine (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    return v[0] + v[1] + v[2] + v[5] + v[6]


def cpu_seconds(pid):
    """utime + stime of `pid` in seconds; None when the process is gone."""
    st = read_stat(pid)
    return None if st is None else st[1] / CLK_TCK


def status_kib(pid, keys=("VmRSS", "VmHWM")):
    """Those /proc/<pid>/status lines of `pid` (key -> KiB); {} when the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in keys:
                    out[key] = int(line.split()[1])
    except OSError:
        pass
    return out


def machine():
    """What a results file says about the machine: date, cores, CPU model, kernel."""
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cores": os.cpu_count(),
        "cpu_model": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                           if ln.startswith("model name")), platform.machine()),
        "kernel": platform.release(),
    }


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg has them."""
    return " ".join(open("/proc/loadavg").read().split()[:3])
