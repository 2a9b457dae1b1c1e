package bgp

import "sync"

// eventQueue hands SessionEvents to the caller's callback on one goroutine,
// in order, without ever blocking the producer (GoBGP's watch goroutine or
// Apply).
type eventQueue struct {
	mu      sync.Mutex
	pending []SessionEvent
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newEventQueue(deliver func(SessionEvent)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run(deliver)
	return q
}

func (q *eventQueue) push(ev SessionEvent) {
	q.mu.Lock()
	if !q.closed {
		q.pending = append(q.pending, ev)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close delivers what is pending, then stops the goroutine.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}

func (q *eventQueue) run(deliver func(SessionEvent)) {
	defer close(q.done)
	for range q.wake {
		q.mu.Lock()
		batch, closed := q.pending, q.closed
		q.pending = nil
		q.mu.Unlock()
		for _, ev := range batch {
			if deliver != nil {
				deliver(ev)
			}
		}
		if closed {
			return
		}
	}
}
