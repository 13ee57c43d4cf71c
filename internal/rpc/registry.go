package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// Errors returned by Registry.Register and Registry.RegisterBlock.
var (
	errNoHandler    = errors.New("rpc: registering needs a handler and at least one message type")
	ErrTypeTaken    = errors.New("rpc: message type already registered")
	ErrUnknownType  = errors.New("rpc: message type not in the table (internal/rpc/types.go)")
	ErrUnknownBlock = errors.New("rpc: message block not in the table (internal/rpc/types.go)")
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
	log     *slog.Logger
	mu      sync.Mutex // serialises registration; Dispatch takes no lock
	routes  [256]atomic.Pointer[Handler]
	dropped atomic.Uint64
	logged  [256]atomic.Bool // the type's first drop has been logged
}

// NewRegistry returns a registry with no handler. logger (nil: discard) hears of the first
// dropped message of each type.
func NewRegistry(logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{log: logger}
}

// Register routes every message of the given types to h. Each type must be in the table
// (types.go) and registered once per registry: a second registration of a type is refused
// with ErrTypeTaken, at wiring time, rather than letting one package silently take
// another's messages. Register is all or nothing: on error no type is registered.
func (r *Registry) Register(h Handler, types ...uint8) error {
	if h == nil || len(types) == 0 {
		return errNoHandler
	}
	for _, t := range types {
		if _, ok := LookupType(t); !ok {
			return fmt.Errorf("%w: %d", ErrUnknownType, t)
		}
	}
	return r.route(h, types)
}

// RegisterBlock routes every number from first to last to h, those of the table's types and
// those no type has yet. The range must be one of the table's blocks exactly (LookupBlock),
// and none of its numbers registered already (ErrTypeTaken); like Register, it is all or
// nothing.
func (r *Registry) RegisterBlock(h Handler, first, last uint8) error {
	if h == nil {
		return errNoHandler
	}
	if b, ok := LookupBlock(first); !ok || b.First != first || b.Last != last {
		return fmt.Errorf("%w: %d-%d", ErrUnknownBlock, first, last)
	}
	types := make([]uint8, 0, int(last-first)+1)
	for t := int(first); t <= int(last); t++ {
		types = append(types, uint8(t))
	}
	return r.route(h, types)
}

func (r *Registry) route(h Handler, types []uint8) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range types {
		if r.routes[t].Load() != nil || slices.Contains(types[:i], t) {
			return fmt.Errorf("%w: %d (%s)", ErrTypeTaken, t, describeType(t))
		}
	}
	for _, t := range types {
		r.routes[t].Store(&h)
	}
	return nil
}

// describeType names a number for logs and errors, from the table.
func describeType(t uint8) string {
	if mt, ok := LookupType(t); ok {
		return fmt.Sprintf("%s, owned by %s", mt.Name, mt.Owner)
	}
	if b, ok := LookupBlock(t); ok {
		return fmt.Sprintf("no type yet, in the block %d-%d of %s", b.First, b.Last, b.Owner)
	}
	return "not in the table"
}

// Registered reports whether a type has a handler.
func (r *Registry) Registered(t uint8) bool { return r.routes[t].Load() != nil }

// Dispatch hands one received message to the handler of its type, or drops and counts it
// when the type has none. It is an rpc Handler.
//
// The first drop of each type is logged, naming the type and the sender: at warning level
// for a number outside the table, which a broker of a newer release sends and this one
// cannot read; at info level for a type of the table, whose owner has not registered yet
// while the node starts (its sender retries).
func (r *Registry) Dispatch(from int32, msgType uint8, payload []byte) {
	if h := r.routes[msgType].Load(); h != nil {
		(*h)(from, msgType, payload)
		return
	}
	r.dropped.Add(1)
	if r.logged[msgType].Swap(true) {
		return
	}
	level := slog.LevelWarn
	if _, ok := LookupType(msgType); ok {
		level = slog.LevelInfo
	}
	r.log.Log(context.Background(), level, "rpc: dropping a message of a type no handler is registered for; later ones of this type are only counted",
		"from", from, "type", msgType, "known_as", describeType(msgType))
}

// Dropped counts the received messages whose type had no handler.
func (r *Registry) Dropped() uint64 { return r.dropped.Load() }
