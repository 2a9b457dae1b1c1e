package allocator

import "errors"

// Reason says why an Assign or Restore failed, in a form the controller
// turns into a Service condition reason.
type Reason string

// The reasons an allocation fails.
const (
	// NoPoolMatches: no pool admits the Service with the IP families it needs.
	NoPoolMatches Reason = "NoPoolMatches"
	// PoolNotFound: the herald.dev/address-pool annotation names no pool.
	PoolNotFound Reason = "PoolNotFound"
	// PoolNotAllowed: the named pool exists but does not admit the Service
	// (namespace, selectors) or is being deleted.
	PoolNotAllowed Reason = "PoolNotAllowed"
	// PoolExhausted: the pools the Service may use have no free address.
	PoolExhausted Reason = "PoolExhausted"
	// RequestedIPInUse: a requested address is held by a Service it may not
	// be shared with.
	RequestedIPInUse Reason = "RequestedIPInUse"
	// RequestedIPNotInPool: a requested address is in no pool (or not in the
	// named one, or the requested addresses are in different pools).
	RequestedIPNotInPool Reason = "RequestedIPNotInPool"
	// RequestedIPNotAllowed: the pool holding a requested address does not
	// admit the Service, or is being deleted.
	RequestedIPNotAllowed Reason = "RequestedIPNotAllowed"
	// IncompatibleSharing: the address is held under the same sharing key
	// by a Service whose ports or traffic policy collide.
	IncompatibleSharing Reason = "IncompatibleSharing"
	// InvalidRequest: the request contradicts itself (two requested
	// addresses of one family, a family the Service does not have, ...).
	InvalidRequest Reason = "InvalidRequest"
)

// Error is the error Assign and Restore return. Message is written for the
// person reading the Service's events: it names the pool, the address and
// the other Service.
type Error struct {
	Reason  Reason
	Message string
}

func (e *Error) Error() string { return e.Message }

// ReasonOf returns the Reason of an *Error in err's chain, or "" when there
// is none.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func fail(reason Reason, message string) *Error {
	return &Error{Reason: reason, Message: message}
}
