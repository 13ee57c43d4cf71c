package broker

// BrokerSummary is one broker as GET /v1/brokers shows it.
type BrokerSummary struct {
	NodeID      int32  `json:"node_id"`
	KafkaAddr   string `json:"kafka_addr"`
	RPCAddr     string `json:"rpc_addr"`
	Rack        string `json:"rack"`
	IsAlive     bool   `json:"is_alive"`
	Maintenance bool   `json:"maintenance"`
	// Leaders counts the partitions it leads as this broker knows them; Replicas the
	// partition replicas the controller assigns it.
	Leaders  int `json:"leaders"`
	Replicas int `json:"replicas"`
}

// BrokerSummaries lists every registered broker, by id.
func (b *Broker) BrokerSummaries() []BrokerSummary {
	st := b.state()
	load := st.ReplicaLoad()
	leaders := map[int32]int{}
	for _, lp := range b.partitionLeaders() {
		if lp.leader >= 0 {
			leaders[lp.leader]++
		}
	}
	brokers := st.Brokers()
	out := make([]BrokerSummary, 0, len(brokers))
	for _, br := range brokers {
		out = append(out, BrokerSummary{NodeID: br.ID, KafkaAddr: br.KafkaAddr, RPCAddr: br.RPCAddr, Rack: br.Rack,
			IsAlive: br.Live, Maintenance: br.Maintenance, Leaders: leaders[br.ID], Replicas: load[br.ID]})
	}
	return out
}
