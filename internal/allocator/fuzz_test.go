package allocator

import "testing"

// byteSource draws the simulation's choices from fuzz input.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}

func (s *byteSource) more() bool { return len(s.b) > 0 }

// FuzzOperations decodes its input into a sequence of Assign, Release,
// Restore and SetPools calls (the same generator as TestRandomOperations)
// and checks every invariant after each call.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("assign release restore setpools share dual-stack"))
	for _, mix := range []func(int) byte{
		func(i int) byte { return byte(i*37 + i/7) },
		func(i int) byte { return byte(i * i) },
	} {
		seed := make([]byte, 512)
		for i := range seed {
			seed[i] = mix(i)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		newSim(t, &byteSource{b: data}, "fuzz input").run(1 << 30)
	})
}
