package broker

import "github.com/cairn-io/cairn/internal/controller"

// ListenerAddr is one named Kafka listener's advertised address.
type ListenerAddr struct {
	Name string // e.g. PLAINTEXT, SSL
	Addr string // host:port clients of that listener are told
}

// registeredListeners is what a broker with listeners ls registers: nil when its one
// listener is PLAINTEXT (then its KafkaAddr says it all, encoded as builds before named
// listeners did), else every listener by name.
func registeredListeners(ls []ListenerAddr) map[string]string {
	if len(ls) == 0 || (len(ls) == 1 && ls[0].Name == controller.PlaintextListener) {
		return nil
	}
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Addr
	}
	return m
}

// On is bi as clients of listener see it: its address on that listener, and false when the
// broker has no such listener (a client of it is not told about the broker, as in Kafka).
// The empty name, outside a connection, is the broker's first address.
func (bi BrokerInfo) On(listener string) (BrokerInfo, bool) {
	if listener == "" {
		return bi, true
	}
	addr, ok := bi.reg.ListenerAddr(listener)
	if !ok {
		return BrokerInfo{}, false
	}
	return brokerAt(bi.reg, addr), true
}

// BrokersOn lists the live brokers that have listener, with their addresses on it.
func (b *Broker) BrokersOn(listener string) []BrokerInfo {
	var out []BrokerInfo
	for _, bi := range b.Brokers() {
		if on, ok := bi.On(listener); ok {
			out = append(out, on)
		}
	}
	return out
}
