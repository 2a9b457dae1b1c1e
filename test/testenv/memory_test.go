package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProcessMemoryOfSelf(t *testing.T) {
	m, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Anon <= 0 || m.File <= 0 || m.HWM < m.RSS {
		t.Errorf("implausible: %+v", m)
	}
	// VmRSS is RssAnon + RssFile + RssShmem
	if m.Anon+m.File > m.RSS {
		t.Errorf("anon %d + file %d exceed RSS %d", m.Anon, m.File, m.RSS)
	}
	if !strings.Contains(m.String(), "MiB") {
		t.Errorf("String() = %q", m.String())
	}
	if _, err := ProcessMemory(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

func TestMachineCPUCountsThisProcess(t *testing.T) {
	before, err := MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	self0, _ := ProcessMemory(os.Getpid())
	// spin until this process has used 100 ms more CPU (ticks of 10 ms)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if m, _ := ProcessMemory(os.Getpid()); m.CPU-self0.CPU >= 100*time.Millisecond {
			break
		}
	}
	self1, _ := ProcessMemory(os.Getpid())
	after, err := MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	// the machine's ticks are sampled, a process's time is measured: allow
	// two ticks between them
	if used := self1.CPU - self0.CPU; after-before < used-20*time.Millisecond {
		t.Errorf("the machine used %s while this process alone used %s", after-before, used)
	}
}

func TestProcessCgroupMemoryOfSelf(t *testing.T) {
	m, err := ProcessCgroupMemory(os.Getpid())
	if err != nil {
		t.Skipf("no memory cgroup to read here: %v", err)
	}
	self, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// this process's anonymous memory is charged to its cgroup
	if m.Usage < self.Anon || m.WorkingSet > m.Usage || m.WorkingSet <= 0 {
		t.Errorf("cgroup %s: usage %d, working set %d; this process alone has %d anonymous", m.Path, m.Usage, m.WorkingSet, self.Anon)
	}
}

func TestCgroupDirOfSelf(t *testing.T) {
	found := 0
	for _, controller := range []string{"cpu", "memory", ""} {
		dir, err := CgroupDir(os.Getpid(), controller)
		if err != nil {
			continue // not this machine's hierarchy
		}
		found++
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			t.Fatalf("%q: %v", controller, err)
		}
		if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(os.Getpid())) {
			t.Errorf("%q: this process is not in %s/cgroup.procs", controller, dir)
		}
	}
	if found == 0 {
		t.Skip("no cgroup hierarchy here")
	}
}
