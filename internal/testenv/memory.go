package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Memory is what /proc says of one process: resident memory now
// (in all, anonymous, and file-backed, the mapped binary), at its peak,
// and the CPU time it has used.
type Memory struct {
	RSS, Anon, File, HWM int64 // bytes
	CPU                  time.Duration
}

// String prints it in MiB.
func (m Memory) String() string {
	return fmt.Sprintf("VmRSS %s (anon %s, file %s), VmHWM %s", mib(m.RSS), mib(m.Anon), mib(m.File), mib(m.HWM))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ProcessMemory reads VmRSS, RssAnon, RssFile and VmHWM from
// /proc/PID/status and utime + stime from /proc/PID/stat.
func ProcessMemory(pid int) (Memory, error) {
	var m Memory
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return m, err
	}
	// after "(comm) ": utime and stime are fields 14 and 15 (clock ticks of 10 ms)
	if _, rest, ok := strings.Cut(string(stat), ") "); ok {
		if f := strings.Fields(rest); len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			m.CPU = time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	fields := map[string]*int64{"VmRSS": &m.RSS, "RssAnon": &m.Anon, "RssFile": &m.File, "VmHWM": &m.HWM}
	for _, line := range strings.Split(string(status), "\n") {
		key, val, _ := strings.Cut(line, ":")
		dst, ok := fields[key]
		if f := strings.Fields(val); ok && len(f) > 0 {
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			*dst = kb * 1024
		}
	}
	return m, nil
}

// MachineCPU is the CPU time every process on the machine has used since
// boot: the first line of /proc/stat, user, nice, system, irq and softirq
// (clock ticks of 10 ms, summed over the CPUs; not idle, iowait nor the
// time a hypervisor gave to others, steal).
func MachineCPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	// user nice system idle iowait irq softirq (guest and guest_nice are
	// already counted in user and nice)
	for i, v := range f[1:min(len(f), 8)] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond, nil
}

// CgroupMemory is the memory of the cgroup a process is in, as the
// kubelet reports a container's: Usage is what the cgroup is charged
// (anonymous memory, page cache, kernel memory such as socket buffers),
// WorkingSet is Usage less the inactive page cache (cAdvisor's
// container_memory_working_set_bytes, what kubectl top shows).
type CgroupMemory struct {
	Path              string
	Usage, WorkingSet int64
}

// ProcessCgroupMemory reads the memory of the cgroup pid is in, from the
// cgroup v1 memory controller or the v2 unified hierarchy.
func ProcessCgroupMemory(pid int) (CgroupMemory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return CgroupMemory{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir := filepath.Join("/sys/fs/cgroup/memory", f[2])
			return readCgroupMemory(dir, "memory.usage_in_bytes", "total_inactive_file")
		case f[0] == "0" && f[1] == "":
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", f[2], "memory.current")); err == nil {
				return readCgroupMemory(filepath.Join("/sys/fs/cgroup", f[2]), "memory.current", "inactive_file")
			}
		}
	}
	return CgroupMemory{}, fmt.Errorf("no memory cgroup for process %d in /proc/%d/cgroup", pid, pid)
}

func readCgroupMemory(dir, usageFile, inactiveKey string) (CgroupMemory, error) {
	m := CgroupMemory{Path: dir}
	usage, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		return m, err
	}
	if m.Usage, err = strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64); err != nil {
		return m, fmt.Errorf("%s/%s: %w", dir, usageFile, err)
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return m, err
	}
	m.WorkingSet = m.Usage
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, inactiveKey+" "); ok {
			inactive, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return m, fmt.Errorf("%s/memory.stat: %q: %w", dir, line, err)
			}
			m.WorkingSet = max(0, m.Usage-inactive)
		}
	}
	return m, nil
}
