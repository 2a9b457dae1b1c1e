// Package labkit is the one harness for tests that run Herald's code
// against real network stacks: the internal lab tests of internal/bgp,
// internal/layer2 and internal/members, and the real-cluster lab in e2e/lab
// (which builds its Kubernetes parts on these pieces).
//
// It is split by concern, one file each:
//
//	ranges.go   the lab's address ranges (198.51.100.0/24, 2001:db8::/32)
//	            and the check that they are free in the root namespace
//	network.go  Network: namespaces, a bridge, veths and addresses for one
//	            test, removed (processes by PID, namespaces by name) when
//	            the test ends
//	process.go  Process: a process started in a namespace (or the root one),
//	            stopped by PID, with its logs; the test binary as a helper
//	pids.go     stopping PIDs and listing a namespace's PIDs
//	frr.go      FRR (zebra, bgpd, bfdd) in a private directory
//	bird.go     BIRD 2 in a private directory
//	poll.go     Eventually for tests, Poll for library code
//
// What it never does: touch an address outside 198.51.100.0/24 and
// 2001:db8::/32, configure anything in the root namespace (a Network
// refuses to start if those ranges are already in use there), stop a
// process by name, or install packages (a test whose tools are missing
// skips with Require and says which Debian package to install).
package labkit
