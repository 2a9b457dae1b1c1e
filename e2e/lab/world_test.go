package lab

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWorlds(t *testing.T) {
	here := state{World: thisWorld(), Owner: recordOf("owner", "", os.Getpid(), "")}
	if here.elsewhere() || here.aliveElsewhere() {
		t.Errorf("a run of this namespace counts as another world's: %+v", here)
	}
	old := state{Owner: here.Owner} // written before worlds: the machine's
	if old.elsewhere() != (thisWorld() != machineWorld()) {
		t.Errorf("a state without a world: elsewhere = %v in %s (machine %s)", old.elsewhere(), thisWorld(), machineWorld())
	}
	other := state{World: "net:[1]", Owner: here.Owner}
	if !other.aliveElsewhere() {
		t.Error("a run of another namespace with a live owner is not left alone")
	}
	other.Owner = procRecord{PID: os.Getpid(), Start: here.Owner.Start + 1} // its owner is gone
	if other.aliveElsewhere() {
		t.Error("a run of another namespace whose owner is gone is not taken for a leftover")
	}
	if thisWorld() == machineWorld() && lockPath("/run/herald-lab") != "/run/herald-lab.lock" {
		t.Errorf("lock in the machine's namespace: %s", lockPath("/run/herald-lab"))
	}
}

func TestRemoveStaleWorldLocks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "herald-lab")
	gone, here := root+".net-1.lock", worldLockPath(root, thisWorld())
	for _, f := range []string{gone, here, root + ".lock"} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleWorldLocks(root)
	if exists(gone) {
		t.Error("the lock of a world no process is in is left")
	}
	if !exists(here) || !exists(root+".lock") {
		t.Error("a live world's lock, or the machine's, was removed")
	}
}

func TestCPUSharesOption(t *testing.T) {
	t.Setenv(CPUSharesEnv, "")
	if o, err := (Options{}).withDefaults(); err != nil || o.CPUShares != labCPUShares {
		t.Errorf("default CPU weight %d, %v", o.CPUShares, err)
	}
	t.Setenv(CPUSharesEnv, "16384")
	if o, err := (Options{}).withDefaults(); err != nil || o.CPUShares != 16384 {
		t.Errorf("CPU weight from %s: %d, %v", CPUSharesEnv, o.CPUShares, err)
	}
	if o, err := (Options{CPUShares: 4096}).withDefaults(); err != nil || o.CPUShares != 4096 {
		t.Errorf("CPU weight set in the options: %d, %v", o.CPUShares, err)
	}
	for _, bad := range []string{"many", "1", "262145"} {
		t.Setenv(CPUSharesEnv, bad)
		if _, err := (Options{}).withDefaults(); err == nil {
			t.Errorf("%s=%s accepted", CPUSharesEnv, bad)
		}
	}
}

// TestSoftirqBoostHolders: which runs hold ksoftirqd's boost, so that only
// the last to let go restores it.
func TestSoftirqBoostHolders(t *testing.T) {
	root := t.TempDir()
	thread := procRecord{Name: "ksoftirqd/0", PID: 15, Start: 7}
	write := func(id string, threads ...procRecord) {
		t.Helper()
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := newStateFile(dir, state{RunID: id, SoftirqThreads: threads}); err != nil {
			t.Fatal(err)
		}
	}
	write("aaaa", thread)
	write("bbbb") // boosted nothing
	write("cccc", thread)
	if err := os.WriteFile(filepath.Join(root, ".new-x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if held := boostHeldBy(root, "aaaa"); !held[thread] || len(held) != 1 {
		t.Errorf("held by others than aaaa: %v, want %v (cccc's)", held, thread)
	}
	if err := os.WriteFile(filepath.Join(root, "cccc", softirqReleased), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if held := boostHeldBy(root, "aaaa"); len(held) != 0 {
		t.Errorf("held after cccc let go: %v", held)
	}
	if !SoftirqBoostHeld(root) {
		t.Error("aaaa's boost is not seen")
	}
	// releasing a thread that is not boosted (a fake PID) restores nothing
	// and marks the run as let go
	if errs := releaseSoftirq(root, "aaaa", []procRecord{thread}); len(errs) != 0 {
		t.Errorf("release: %v", errs)
	}
	if SoftirqBoostHeld(root) {
		t.Error("held after every run let go")
	}
}
