package testenv

import (
	"os"
	"strings"
	"testing"
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
