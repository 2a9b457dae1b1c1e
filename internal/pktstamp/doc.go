// Package pktstamp reads frames from a packet socket together with the
// time the kernel received them (SO_TIMESTAMPNS). A reader that was
// descheduled learns when a frame arrived, not when it got round to it: the
// lab's probers use it so that their own lateness never reads as a late
// answer from the node under test, and the speaker uses it to measure how
// long its answers took from the request's arrival.
package pktstamp
