package rpc

// The one table of inter-broker message types. Every package that sends or receives on the
// transport takes its numbers from here and registers its handlers against them (Registry);
// no package writes a message number of its own. The transport itself gives the numbers no
// meaning: the owner named in each entry does.
//
// A new message type gets a new number (from its owner's block, if it has one: see
// messageBlocks), a constant below and an entry in messageTypes. A number is never reused for
// another meaning: a broker of the previous release still sends the old one during a rolling
// upgrade.
const (
	MsgRaft        uint8 = 1 // internal/raftrpc: raft batches of many groups
	MsgRaftVisible uint8 = 2 // internal/raftrpc: leaders' visible indexes for their followers

	MsgJoinRequest     uint8 = 16 // internal/cluster: joiner asks to be added to group 0
	MsgJoinResponse    uint8 = 17 // internal/cluster: added, or who leads group 0
	MsgProposeRequest  uint8 = 18 // internal/cluster: propose this controller command
	MsgProposeResponse uint8 = 19 // internal/cluster: applied at an index, with its result
	MsgBrokerHeartbeat uint8 = 20 // internal/cluster: this broker is alive

	MsgLeaders         uint8 = 32 // internal/broker: the partition groups this broker leads
	MsgForwardRequest  uint8 = 33 // internal/broker: a produce for a partition the receiver leads
	MsgForwardResponse uint8 = 34 // internal/broker: the leader's answer to a forwarded produce
	MsgMoveProgress    uint8 = 40 // internal/broker: how the partition moves this broker drives are going
	MsgTransferLeader  uint8 = 35 // internal/broker: hand the leadership of a group you lead to a replica

	MsgReplicaStateRequest  uint8 = 41 // internal/broker: how much of a group's log do you hold?
	MsgReplicaStateResponse uint8 = 42 // internal/broker: the answer, for a force recovery's plan

	MsgTxnMarkerRequest  uint8 = 43 // internal/broker: write this transaction marker on a partition you lead
	MsgTxnMarkerResponse uint8 = 44 // internal/broker: the marker is acknowledged, or why not
	MsgTxnVerifyRequest  uint8 = 45 // internal/broker: is this partition in this producer's transaction?
	MsgTxnVerifyResponse uint8 = 46 // internal/broker: the coordinator's answer

	MsgNodeViewRequest  uint8 = 47 // internal/broker: what do your replicas and groups look like? (the console)
	MsgNodeViewResponse uint8 = 48 // internal/broker: the answer
)

// The block of numbers kept for internal/cluster, its present types and future ones.
const (
	ClusterBlockFirst uint8 = 16
	ClusterBlockLast  uint8 = 31
)

// MessageBlock is a range of numbers the table keeps for one owner: the types it has now and
// the ones a later release adds. The owner registers the whole block (Registry.RegisterBlock),
// so that a number it does not know yet, sent by a newer broker during a rolling upgrade,
// reaches the owner, which refuses it visibly, instead of being dropped by the registry.
type MessageBlock struct {
	First, Last uint8
	Owner       string
}

// messageBlocks must not overlap, and every type of the table inside a block belongs to the
// block's owner (the table test checks both).
var messageBlocks = []MessageBlock{
	{First: ClusterBlockFirst, Last: ClusterBlockLast, Owner: "internal/cluster"},
}

// LookupBlock returns the block a number lies in, and whether there is one.
func LookupBlock(t uint8) (MessageBlock, bool) {
	for _, b := range messageBlocks {
		if t >= b.First && t <= b.Last {
			return b, true
		}
	}
	return MessageBlock{}, false
}

// MessageType describes one entry of the table.
type MessageType struct {
	Type      uint8
	Name      string // for logs and errors
	Owner     string // the package that registers its handler and gives the payload meaning
	Direction string // who sends it to whom
}

// messageTypes is indexed by number, so a number given to two types is a duplicate index,
// which the compiler refuses.
var messageTypes = [256]MessageType{
	MsgRaft:        {Name: "raft batch", Owner: "internal/raftrpc", Direction: "broker → broker"},
	MsgRaftVisible: {Name: "raft visible reports", Owner: "internal/raftrpc", Direction: "partition leader → its followers' brokers"},

	MsgJoinRequest:     {Name: "join request", Owner: "internal/cluster", Direction: "joiner → any broker"},
	MsgJoinResponse:    {Name: "join response", Owner: "internal/cluster", Direction: "broker → joiner"},
	MsgProposeRequest:  {Name: "propose request", Owner: "internal/cluster", Direction: "any broker → controller leader"},
	MsgProposeResponse: {Name: "propose response", Owner: "internal/cluster", Direction: "controller leader → proposer"},
	MsgBrokerHeartbeat: {Name: "broker heartbeat", Owner: "internal/cluster", Direction: "any broker → controller leader"},

	MsgLeaders:         {Name: "leaders", Owner: "internal/broker", Direction: "broker → every broker"},
	MsgForwardRequest:  {Name: "forward request", Owner: "internal/broker", Direction: "broker → partition leader"},
	MsgForwardResponse: {Name: "forward response", Owner: "internal/broker", Direction: "partition leader → broker"},
	MsgMoveProgress:    {Name: "move progress", Owner: "internal/broker", Direction: "partition leader → every broker"},
	MsgTransferLeader:  {Name: "transfer leadership", Owner: "internal/broker", Direction: "any broker → partition leader"},

	MsgReplicaStateRequest:  {Name: "replica state request", Owner: "internal/broker", Direction: "any broker → a replica's broker"},
	MsgReplicaStateResponse: {Name: "replica state response", Owner: "internal/broker", Direction: "a replica's broker → requester"},

	MsgTxnMarkerRequest:  {Name: "transaction marker request", Owner: "internal/broker", Direction: "transaction coordinator → partition leader"},
	MsgTxnMarkerResponse: {Name: "transaction marker response", Owner: "internal/broker", Direction: "partition leader → transaction coordinator"},
	MsgTxnVerifyRequest:  {Name: "transaction verify request", Owner: "internal/broker", Direction: "partition leader → transaction coordinator"},
	MsgTxnVerifyResponse: {Name: "transaction verify response", Owner: "internal/broker", Direction: "transaction coordinator → partition leader"},

	MsgNodeViewRequest:  {Name: "node view request", Owner: "internal/broker", Direction: "console's broker → every broker"},
	MsgNodeViewResponse: {Name: "node view response", Owner: "internal/broker", Direction: "broker → console's broker"},
}

// LookupType returns the table's entry for a number, and whether the table has one.
func LookupType(t uint8) (MessageType, bool) {
	mt := messageTypes[t]
	mt.Type = t
	return mt, mt.Name != ""
}

// MessageTypes lists the table in number order.
func MessageTypes() []MessageType {
	var out []MessageType
	for t := range messageTypes {
		if mt, ok := LookupType(uint8(t)); ok {
			out = append(out, mt)
		}
	}
	return out
}
