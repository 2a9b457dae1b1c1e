package config

import (
	"fmt"
	"testing"
)

func FuzzParseCommunity(f *testing.F) {
	for _, s := range []string{"0:0", "65535:65535", "64512:100", "65536:1", "large:1:2:3", "large:4294967295:0:1", "large:1:2", "a:b", ":", "", "large:::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		std, large, err := ParseCommunity(s)
		if err != nil {
			return
		}
		var back string
		if large != nil {
			back = fmt.Sprintf("large:%d:%d:%d", large[0], large[1], large[2])
		} else {
			back = fmt.Sprintf("%d:%d", std>>16, std&0xffff)
		}
		std2, large2, err := ParseCommunity(back)
		if err != nil || std2 != std || (large == nil) != (large2 == nil) || (large != nil && *large != *large2) {
			t.Fatalf("%q -> %q does not round-trip: %v", s, back, err)
		}
	})
}
