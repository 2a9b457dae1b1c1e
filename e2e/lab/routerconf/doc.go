// Package routerconf renders the lab router's configuration (FRR 8.4 and
// BIRD 2.0) from Go values and parses what the routers print back (FRR's
// JSON, birdc's text) into one neutral model of RIB paths and BGP peers.
//
// It is pure: it never runs a daemon, a command or a socket. The lab
// (e2e/lab) runs the daemons and hands their output to these parsers.
package routerconf
