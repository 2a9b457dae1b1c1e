package l2owner

import "time"

// The timing of the hand-over. Every constant that decides how long an
// address is answered by whom when it changes owner lives here, with why
// its value; internal/layer2, internal/members and internal/speaker take
// their defaults from these.

// AskFor is how long a process that found it was paused waits, silent,
// for another host to answer its question of who answers an address
// before it claims the address again. A node that took the address over
// answers in well under a millisecond on a LAN; a busy one was measured
// answering up to about 30 ms late in the lab (herald_l2_answer_delay
// during rolling updates). 100 ms covers that three times over, and it is
// the price of a false alarm: an address whose owner was starved, not
// dead, stays dark that much longer than the stall itself.
const AskFor = 100 * time.Millisecond

// Refresh is how often an owner announces each of its addresses again
// with one gratuitous ARP / unsolicited NA: two owners of one address (a
// split brain) hear each other within it, and the fence stops one. 3 s
// keeps the traffic at one frame per address every few seconds (10,000
// addresses: about 3,300 frames a second at most on a segment) while a
// split brain heals within seconds; a lost fence lasts 2 × Refresh after
// the winner was last heard, so one lost refresh does not lift it.
const Refresh = 3 * time.Second

// FenceSettle is how long an address must have been claimed here before
// another speaker's announcement of it counts as a conflict for the
// fence rather than a hand-over in progress. The old owner of an address
// keeps announcing it (its refresh) until it has reconciled and turned
// releasing; that takes up to about a second on a busy node (the
// welcome's measurements: 300 ms late reconciles, WelcomeTimeout), and a
// new owner that lost the fence to that announcement would leave the
// address dark. 2 s covers that twice.
const FenceSettle = 2 * time.Second

// FenceVerify is how often a node that lost the fence (or deferred after
// a pause) asks whether the winner still answers; nobody answering within
// half of it means the winner has gone (handed the address over or
// stopped) and this node answers again. A winner answers in well under a
// millisecond; 500 ms bounds the time both sides can be silent together
// to 0.75 s on average, against 2 × Refresh without it, while asking at
// most twice a second per fenced address.
const FenceVerify = 500 * time.Millisecond

// ContestedMemory is how long another speaker's announcement of an
// address this node still owns is remembered: when the address turns
// releasing within that time, the new owner has announced itself already
// (its speaker learned of the change first) and this node stops answering
// at once instead of waiting for the next frame of the new owner's burst
// (GratuitousInterval later). 3 s outlasts the first half of the burst
// (GratuitousCount × GratuitousInterval) and the slowest reconcile seen
// between two speakers (about a second).
const ContestedMemory = 3 * time.Second

// ReleaseAsks are when, after an address turns releasing while answered
// here, this node asks who answers it (the new owner may have answered
// all along, a node declared dead by mistake, and never announce): at
// once, then twice more within ReleaseGrace in case a frame was lost or
// the new owner's speaker was late (250 ms: a busy node's reconcile;
// 1 s: the welcome's bound). Each round asks only for the addresses still
// released and answered here.
var ReleaseAsks = [...]time.Duration{0, 250 * time.Millisecond, time.Second}

// ReleaseGrace bounds how long a node that lost an address to another
// live node keeps answering for it while the new owner takes over (the
// speaker's --release-grace default). The new owner announces itself
// once it has settled, at most WelcomeTimeout after the member list saw
// it alive, and the old owner's grace starts no earlier than that: 2 s
// is twice the welcome's bound, and past it a new owner that never
// announced (a crash right after its claim) costs at most that much dark
// time instead of two answering nodes forever.
const ReleaseGrace = 2 * time.Second

// WelcomeTimeout bounds how long a starting speaker waits for the members
// it greeted to welcome it (they have acted on its arrival: the old owners
// of its addresses have turned releasing and answer until it announces
// itself) before it settles and claims anyway: members.Config's
// WelcomeTimeout, set by the speaker with WelcomeTimeoutFor. It must stay
// well below ReleaseGrace: an old owner that reconciled as early as the
// newcomer's first successful join started its grace then, and past it
// stops answering whether or not the newcomer has announced. Half the
// grace leaves the other half for the newcomer's claim and first
// announcement; a welcome takes a round trip and one reconcile (tens of
// ms; 300 ms seen on a busy machine), well within it.
const WelcomeTimeout = ReleaseGrace / 2

// WelcomeTimeoutFor is WelcomeTimeout for a release grace set by the
// operator (--release-grace): half of it, for the same reason.
func WelcomeTimeoutFor(grace time.Duration) time.Duration { return grace / 2 }

// GratuitousCount and GratuitousInterval shape the burst a new owner
// sends when it starts answering an address: one gratuitous ARP /
// unsolicited NA at once, then five more a second apart. Linux ignores a
// neighbour update that arrives within its ARP locktime (1 s) of the
// previous one, so a single announcement right after the old owner's last
// reply can be lost; the repeats cover that window, for clients as well
// as for an old owner that missed the first.
const (
	GratuitousCount    = 6
	GratuitousInterval = time.Second
)

// HeartbeatsPerPause: the pause detection's heartbeat runs this many
// times per Config.PauseAfter, so in a process that runs, its stamp is at
// most a quarter of PauseAfter old, and a heartbeat delayed by up to three
// quarters of it (a starved process) is not taken for a pause.
const HeartbeatsPerPause = 4
