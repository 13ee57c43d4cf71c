package rpc

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Errors returned by Registry.Register.
var (
	ErrTypeTaken   = errors.New("rpc: message type already registered")
	ErrUnknownType = errors.New("rpc: message type not in the table (internal/rpc/types.go)")
)

// Registry routes each received message to the handler registered for its type. Its Dispatch
// is the transport's Handler (Options.Handler), so a node builds the registry first, gives
// it to the transport, and each package registers its own types when it is constructed,
// with the handler it already has: nothing needs a handler that does not exist yet.
//
// Registration may happen while messages arrive (a package constructed after the transport
// started): until a type is registered its messages are dropped and counted, like those of a
// type nobody registers, and the connection stays open. Every sender on the inter-broker
// network retries or repeats what it needs, so a message dropped this way costs only time.
//
// All methods are safe for concurrent use.
type Registry struct {
	mu      sync.Mutex // serialises Register; Dispatch takes no lock
	routes  [256]atomic.Pointer[Handler]
	dropped atomic.Uint64
}

// NewRegistry returns a registry with no handler.
func NewRegistry() *Registry { return &Registry{} }

// Register routes every message of the given types to h. Each type must be in the table
// (types.go) and registered once per registry: a second registration of a type is refused
// with ErrTypeTaken, at wiring time, rather than letting one package silently take
// another's messages. Register is all or nothing: on error no type is registered.
func (r *Registry) Register(h Handler, types ...uint8) error {
	if h == nil || len(types) == 0 {
		return errors.New("rpc: Register needs a handler and at least one message type")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range types {
		mt, ok := LookupType(t)
		if !ok {
			return fmt.Errorf("%w: %d", ErrUnknownType, t)
		}
		if r.routes[t].Load() != nil || slices.Contains(types[:i], t) {
			return fmt.Errorf("%w: %d (%s, owned by %s)", ErrTypeTaken, t, mt.Name, mt.Owner)
		}
	}
	for _, t := range types {
		r.routes[t].Store(&h)
	}
	return nil
}

// Registered reports whether a type has a handler.
func (r *Registry) Registered(t uint8) bool { return r.routes[t].Load() != nil }

// Dispatch hands one received message to the handler of its type, or drops and counts it
// when the type has none. It is an rpc Handler.
func (r *Registry) Dispatch(from int32, msgType uint8, payload []byte) {
	if h := r.routes[msgType].Load(); h != nil {
		(*h)(from, msgType, payload)
		return
	}
	r.dropped.Add(1)
}

// Dropped counts the received messages whose type had no handler.
func (r *Registry) Dropped() uint64 { return r.dropped.Load() }
