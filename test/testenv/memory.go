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
	if dir, err := CgroupDir(pid, "memory"); err == nil {
		return readCgroupMemory(dir, "memory.usage_in_bytes", "total_inactive_file")
	}
	dir, err := CgroupDir(pid, "")
	if err != nil {
		return CgroupMemory{}, err
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.current")); err != nil {
		return CgroupMemory{}, fmt.Errorf("no memory cgroup for process %d: %w", pid, err)
	}
	return readCgroupMemory(dir, "memory.current", "inactive_file")
}

// unifiedMount is where the cgroup v2 hierarchy is mounted: at
// /sys/fs/cgroup on a v2 machine, at /sys/fs/cgroup/unified beside the v1
// controllers on a hybrid one.
func unifiedMount() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup"
	}
	return "/sys/fs/cgroup/unified"
}

// CgroupDir is the directory under /sys/fs/cgroup of the cgroup process
// pid is in, from /proc/PID/cgroup: for a cgroup v1 controller ("cpu",
// "memory"), or with controller "" in the v2 unified hierarchy.
func CgroupDir(pid int, controller string) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		switch {
		case len(f) != 3:
		case controller == "" && f[0] == "0" && f[1] == "":
			return filepath.Join(unifiedMount(), f[2]), nil
		case controller != "" && slices.Contains(strings.Split(f[1], ","), controller):
			return filepath.Join("/sys/fs/cgroup", controller, f[2]), nil
		}
	}
	if controller == "" {
		controller = "unified (v2)"
	}
	return "", fmt.Errorf("process %d is in no cgroup of the %s hierarchy (/proc/%d/cgroup)", pid, controller, pid)
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
