package deploy

import (
	"fmt"

	"github.com/herald-lb/herald/internal/testenv"
)

// SpeakerMemory reads the memory and CPU time of every running speaker,
// by node.
func (h *Herald) SpeakerMemory() (map[string]testenv.Memory, error) {
	out := map[string]testenv.Memory{}
	for node, p := range h.Speakers {
		m, err := testenv.ProcessMemory(p.PID())
		if err != nil {
			return nil, fmt.Errorf("speaker on %s: %w", node, err)
		}
		out[node] = m
	}
	return out, nil
}
