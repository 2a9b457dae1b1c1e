// Package config turns Herald's custom resources (and the Secrets they
// name) into one validated, immutable Config snapshot plus a list of
// problems, each naming the object and the field.
//
// Build is a pure function: no client, no clock, no randomness. The
// controller, the speaker and status reporting all call it, so there is one
// answer to "is this configuration valid".
//
// Rules that one object can check live in the CRD schema; Build checks them
// again where a wrong value would hurt (an object written before a schema
// change) and adds the rules that span objects:
//   - pools whose addresses overlap: the older pool (by creation time, then
//     name) wins; the newer is reported Conflicting and left out, never the
//     other way round;
//   - advertisements naming a missing pool or peer, or a Community alias that
//     does not exist: the reference is reported and dropped, the rest of the
//     object stays in force (an emptied list selects nothing, never all);
//   - peers naming a missing BFD profile (the session runs without BFD) or a
//     missing password Secret (the session is left out: it could not come up
//     authenticated);
//   - LOCAL_PREF for an eBGP peer and aggregation lengths that would cover
//     addresses outside the pool.
//
// LastGood wraps Build with a memory of the last valid version of each
// object: an edit Build refuses keeps that version in force (its problems
// end with "keeping the last valid version"), and when an edit makes two
// objects collide the edited one is refused, whichever is older. An object
// never valid is left out. The controller and the speaker both build
// through a LastGood.
//
// One bad object never takes down the rest of the configuration, and
// leaving a pool out never takes an address from a Service: the allocator
// keeps assignments whatever the configuration says.
package config
