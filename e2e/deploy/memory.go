package deploy

import (
	"fmt"

	"github.com/herald-lb/herald/test/testenv"
)

// SpeakerMemory reads the memory and CPU time of every running speaker
// process, by node.
func (h *Herald) SpeakerMemory() (map[string]testenv.Memory, error) {
	out := map[string]testenv.Memory{}
	for node, s := range h.Speakers {
		pid, err := s.PID()
		if err != nil {
			return nil, err
		}
		m, err := testenv.ProcessMemory(pid)
		if err != nil {
			return nil, fmt.Errorf("speaker on %s: %w", node, err)
		}
		out[node] = m
	}
	return out, nil
}
