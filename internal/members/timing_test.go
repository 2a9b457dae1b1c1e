package members

import (
	"strings"
	"testing"
	"time"
)

func TestTimingPresetsAreValid(t *testing.T) {
	want := map[string]Timing{"default": DefaultTiming(), "large": LargeClusterTiming(), "large-fast": FastLargeClusterTiming()}
	for _, name := range PresetNames() {
		tm, err := Preset(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tm != want[name] {
			t.Errorf("Preset(%q) = %+v, want %+v", name, tm, want[name])
		}
		if err := tm.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("PresetNames leaves out %v", want)
	}
	if _, err := Preset("huge"); err == nil || !strings.Contains(err.Error(), "large-fast") {
		t.Errorf("unknown preset: %v, want an error listing the presets", err)
	}
	// large-fast detects faster than large at any size: a shorter probe
	// interval and a shorter suspicion.
	f, l := FastLargeClusterTiming(), LargeClusterTiming()
	if f.ProbeInterval >= l.ProbeInterval || f.SuspicionMult*int(f.ProbeInterval) >= l.SuspicionMult*int(l.ProbeInterval) {
		t.Errorf("large-fast %+v is not faster than large %+v", f, l)
	}
}

func TestTimingValidateNamesEveryBadField(t *testing.T) {
	tm := DefaultTiming()
	tm.ProbeTimeout = tm.ProbeInterval
	tm.GossipInterval = 0
	tm.SuspicionMult = 0
	tm.StreamTimeout = -time.Second
	err := tm.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, field := range []string{"timing.ProbeTimeout", "timing.GossipInterval", "timing.SuspicionMult", "timing.StreamTimeout"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	tm := DefaultTiming()
	tm.PushPullInterval = 0
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no node name", Config{SecretKey: testKey()}, "NodeName is empty"},
		{"bad port", Config{NodeName: "n1", BindPort: 70000, SecretKey: testKey()}, "BindPort 70000"},
		{"bad timing", Config{NodeName: "n1", SecretKey: testKey(), Timing: tm}, "timing.PushPullInterval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestMinDetection: the quickest detection of each preset, by the
// package comment's arithmetic (probe interval plus the least suspicion
// timeout).
func TestMinDetection(t *testing.T) {
	for name, want := range map[string]time.Duration{"default": 240 * time.Millisecond, "large": time.Second, "large-fast": 360 * time.Millisecond} {
		tm, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := tm.MinDetection(); got != want {
			t.Errorf("%s: MinDetection %v, want %v", name, got, want)
		}
	}
}
