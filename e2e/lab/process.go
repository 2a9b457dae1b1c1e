package lab

import (
	"path/filepath"
	"strings"
	"time"
)

// stopGrace is how long a lab process's Stop waits after SIGTERM before
// SIGKILL.
const stopGrace = 10 * time.Second

// logPath is the log file for a process name in the run directory.
func (l *Lab) logPath(name string) string {
	return filepath.Join(l.dir, "logs", strings.ReplaceAll(name, "/", "_")+".log")
}
