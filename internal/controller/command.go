package controller

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Version is the encoding version of commands and snapshots. A decoder refuses a higher
// version with ErrUnsupportedVersion: a replica that cannot understand a committed entry
// must stop rather than skip it and diverge. Version 2 added the reassignment commands
// (see sinceVersion); version 3 the decommission commands; version 4 force recovery;
// version 5 the SCRAM credential commands (users.go); version 6 the ACL commands (acls.go)
// and the brokers' named listeners (RegisterBroker.Listeners, encoded at version 6 only
// when set).
const Version = 6

// ErrUnsupportedVersion reports a command or snapshot of an encoding version this build
// does not know.
var ErrUnsupportedVersion = errors.New("controller: unsupported encoding version")

// ErrMalformed reports bytes that are not a well-formed command or snapshot.
var ErrMalformed = errors.New("controller: malformed encoding")

// TopicID is a topic's 16-byte id (Kafka's topic UUID). It encodes as 32 hex digits.
type TopicID [16]byte

// IsZero reports whether id is the all-zero id, which no topic may have.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// String returns the id as 32 hex digits.
func (id TopicID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText encodes the id as 32 hex digits.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes 32 hex digits.
func (id *TopicID) UnmarshalText(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("topic id must be 32 hex digits, got %d characters", len(b))
	}
	var out TopicID
	if _, err := hex.Decode(out[:], b); err != nil {
		return err
	}
	*id = out
	return nil
}

// Command is one change to the cluster metadata: the payload of a group-0 Raft entry.
type Command interface {
	op() string
}

// SetClusterID names the cluster. It must be the first command of the log; every other
// command is refused until it has been applied.
type SetClusterID struct {
	ClusterID string `json:"cluster_id"`
}

// RegisterBroker adds a broker or, with a higher incarnation, updates a restarted one. A
// registered broker is live.
type RegisterBroker struct {
	ID          int32  `json:"id"`
	KafkaAddr   string `json:"kafka_addr"`
	RPCAddr     string `json:"rpc_addr"`
	Rack        string `json:"rack,omitempty"`
	Incarnation uint64 `json:"incarnation"`
	// Listeners are the advertised address of each named Kafka listener (version 6). A
	// broker with the one PLAINTEXT listener sends none, so its registration is encoded as
	// before; KafkaAddr is then its PLAINTEXT address.
	Listeners map[string]string `json:"listeners,omitempty"`
}

// encodingVersion is the version a RegisterBroker needs: 6 with listeners, 1 without.
func (c RegisterBroker) encodingVersion() int {
	if len(c.Listeners) > 0 {
		return 6
	}
	return 1
}

// versioned is a command whose encoding version depends on its content (a field added
// later), not only on its op.
type versioned interface{ encodingVersion() int }

// SetBrokerLiveness records the controller leader's verdict on a broker's liveness. The
// incarnation must match the registered one, so that a verdict about a previous life of the
// broker does not fence its new one.
type SetBrokerLiveness struct {
	ID          int32  `json:"id"`
	Incarnation uint64 `json:"incarnation"`
	Live        bool   `json:"live"`
}

// CreateTopic creates a topic. The proposer computes Assignment with Place; apply checks it
// names registered, distinct brokers, RF per partition.
type CreateTopic struct {
	Name       string            `json:"name"`
	ID         TopicID           `json:"id"`
	Partitions int32             `json:"partitions"`
	RF         int16             `json:"rf"`
	Configs    map[string]string `json:"configs,omitempty"`
	Assignment [][]int32         `json:"assignment"`
}

// DeleteTopic deletes a topic. A non-zero ID must match the topic's id.
type DeleteTopic struct {
	Name string  `json:"name"`
	ID   TopicID `json:"id"`
}

// CreatePartitions appends partitions to a topic; NewAssignment holds the replicas of each
// added partition, in order.
type CreatePartitions struct {
	Name          string    `json:"name"`
	NewAssignment [][]int32 `json:"new_assignment"`
}

// SetTopicConfig changes a topic's config overrides: with Replace the overrides become
// exactly Overrides (AlterConfigs); otherwise Overrides are set and Delete removed
// (IncrementalAlterConfigs). With IfUnchanged the change applies only while the overrides
// are still exactly Expect, and is rejected with ErrConfigChanged otherwise: a broker builds
// the new set from its own replica's view, which may lag a change made through another
// broker, and an unconditional replace would silently undo that change.
type SetTopicConfig struct {
	Name        string            `json:"name"`
	Overrides   map[string]string `json:"overrides,omitempty"`
	Delete      []string          `json:"delete,omitempty"`
	Replace     bool              `json:"replace,omitempty"`
	IfUnchanged bool              `json:"if_unchanged,omitempty"`
	Expect      map[string]string `json:"expect,omitempty"`
}

// SetClusterConfig changes the cluster config overrides, as SetTopicConfig does a topic's.
type SetClusterConfig struct {
	Overrides   map[string]string `json:"overrides,omitempty"`
	Delete      []string          `json:"delete,omitempty"`
	Replace     bool              `json:"replace,omitempty"`
	IfUnchanged bool              `json:"if_unchanged,omitempty"`
	Expect      map[string]string `json:"expect,omitempty"`
}

// ErrConfigChanged rejects a SetTopicConfig or SetClusterConfig with IfUnchanged whose
// Expect no longer holds. The proposer's replica has applied the rejection, and so every
// change before it: building the change again from that replica's view is current.
var ErrConfigChanged = kerr.InvalidUpdateVersion

// AllocateProducerIDBlock hands a broker the next Size producer ids; Result.ProducerIDs
// holds the block.
type AllocateProducerIDBlock struct {
	Broker int32 `json:"broker"`
	Size   int32 `json:"size"`
}

func (SetClusterID) op() string            { return "set_cluster_id" }
func (RegisterBroker) op() string          { return "register_broker" }
func (SetBrokerLiveness) op() string       { return "set_broker_liveness" }
func (CreateTopic) op() string             { return "create_topic" }
func (DeleteTopic) op() string             { return "delete_topic" }
func (CreatePartitions) op() string        { return "create_partitions" }
func (SetTopicConfig) op() string          { return "set_topic_config" }
func (SetClusterConfig) op() string        { return "set_cluster_config" }
func (AllocateProducerIDBlock) op() string { return "allocate_producer_id_block" }

var decoders = map[string]func() Command{
	"set_cluster_id":             func() Command { return &SetClusterID{} },
	"register_broker":            func() Command { return &RegisterBroker{} },
	"set_broker_liveness":        func() Command { return &SetBrokerLiveness{} },
	"create_topic":               func() Command { return &CreateTopic{} },
	"delete_topic":               func() Command { return &DeleteTopic{} },
	"create_partitions":          func() Command { return &CreatePartitions{} },
	"set_topic_config":           func() Command { return &SetTopicConfig{} },
	"set_cluster_config":         func() Command { return &SetClusterConfig{} },
	"allocate_producer_id_block": func() Command { return &AllocateProducerIDBlock{} },
	"begin_reassignment":         func() Command { return &BeginReassignment{} },
	"cancel_reassignment":        func() Command { return &CancelReassignment{} },
	"mark_reassignment_final":    func() Command { return &MarkReassignmentFinal{} },
	"complete_reassignment":      func() Command { return &CompleteReassignment{} },
	"set_broker_maintenance":     func() Command { return &SetBrokerMaintenance{} },
	"decommission_broker":        func() Command { return &DecommissionBroker{} },
	"recommission_broker":        func() Command { return &RecommissionBroker{} },
	"mark_broker_decommissioned": func() Command { return &MarkBrokerDecommissioned{} },
	"force_recover_partition":    func() Command { return &ForceRecoverPartition{} },
	"upsert_scram_credential":    func() Command { return &UpsertScramCredential{} },
	"delete_scram_credential":    func() Command { return &DeleteScramCredential{} },
	"create_acls":                func() Command { return &CreateACLs{} },
	"delete_acls":                func() Command { return &DeleteACLs{} },
}

// sinceVersion is the encoding version that introduced each command newer than version 1.
// Such a command is encoded with its version, so that a build that predates it stops at it
// (ErrUnsupportedVersion) instead of rejecting it as garbage and moving on: a replica that
// skipped a move the others applied would diverge. Older commands keep version 1, so their
// bytes stay what they were.
var sinceVersion = map[string]int{
	"begin_reassignment":         2,
	"cancel_reassignment":        2,
	"mark_reassignment_final":    2,
	"complete_reassignment":      2,
	"set_broker_maintenance":     2,
	"decommission_broker":        3,
	"recommission_broker":        3,
	"mark_broker_decommissioned": 3,
	"force_recover_partition":    4,
	"upsert_scram_credential":    5,
	"delete_scram_credential":    5,
	"create_acls":                6,
	"delete_acls":                6,
}

// envelope is the encoded form of a command: {"v":1,"op":"create_topic","body":{...}}.
// encoding/json writes struct fields in declaration order and map keys sorted, so the
// encoding of a command is deterministic.
type envelope struct {
	V    int             `json:"v"`
	Op   string          `json:"op"`
	Body json.RawMessage `json:"body"`
}

// EncodeCommand encodes c as a Raft entry payload. c may be a command value or a pointer to
// one.
func EncodeCommand(c Command) ([]byte, error) {
	if c == nil {
		return nil, errors.New("controller: nil command")
	}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	v := max(1, sinceVersion[c.op()])
	if vc, ok := c.(versioned); ok {
		v = max(v, vc.encodingVersion())
	}
	return json.Marshal(envelope{V: v, Op: c.op(), Body: body})
}

// DecodeCommand decodes a payload written by EncodeCommand. It returns a pointer to the
// command struct (for example *CreateTopic). Unknown fields, unknown ops and trailing bytes
// are ErrMalformed; another version is ErrUnsupportedVersion. It never panics.
func DecodeCommand(b []byte) (Command, error) {
	var env envelope
	if err := strictUnmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := checkVersion(env.V); err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	mk, ok := decoders[env.Op]
	if !ok {
		return nil, fmt.Errorf("%w: unknown command %q", ErrMalformed, env.Op)
	}
	if env.V < sinceVersion[env.Op] {
		return nil, fmt.Errorf("%w: %s is a version %d command in a version %d envelope", ErrMalformed, env.Op, sinceVersion[env.Op], env.V)
	}
	c := mk()
	if err := strictUnmarshal(env.Body, c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, env.Op, err)
	}
	if vc, ok := c.(versioned); ok && vc.encodingVersion() > env.V {
		return nil, fmt.Errorf("%w: %s has version %d fields in a version %d envelope", ErrMalformed, env.Op, vc.encodingVersion(), env.V)
	}
	return c, nil
}

// checkVersion accepts Version. A missing or non-positive version is garbage (ErrMalformed);
// a higher one comes from a newer build (ErrUnsupportedVersion).
func checkVersion(v int) error {
	switch {
	case v < 1:
		return fmt.Errorf("%w: version %d", ErrMalformed, v)
	case v > Version:
		return fmt.Errorf("%w: version %d, this build knows %d", ErrUnsupportedVersion, v, Version)
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	if len(b) == 0 {
		return errors.New("empty")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	var rest json.RawMessage
	if err := d.Decode(&rest); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}
