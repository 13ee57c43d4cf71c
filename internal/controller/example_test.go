package controller_test

import (
	"fmt"

	"github.com/cairn-io/cairn/internal/controller"
)

func ExamplePlace() {
	brokers := []controller.BrokerInfo{
		{ID: 1, Rack: "eu-1a"}, {ID: 2, Rack: "eu-1a"},
		{ID: 3, Rack: "eu-1b"}, {ID: 4, Rack: "eu-1b"},
		{ID: 5, Rack: "eu-1c"}, {ID: 6, Rack: "eu-1c"},
	}
	assignment, err := controller.Place(brokers, nil, 4, 3, 0)
	fmt.Println(assignment, err)
	// Output: [[1 3 5] [2 4 6] [3 5 1] [4 6 2]] <nil>
}

func ExampleState_Apply() {
	s := controller.New()
	for i, c := range []controller.Command{
		controller.SetClusterID{ClusterID: "cairn-1"},
		controller.RegisterBroker{ID: 1, KafkaAddr: "b1:9092", RPCAddr: "b1:9093", Rack: "a", Incarnation: 1},
		controller.AllocateProducerIDBlock{Broker: 1, Size: 1000},
		controller.AllocateProducerIDBlock{Broker: 7, Size: 1000},
	} {
		payload, _ := controller.EncodeCommand(c)
		res, err := s.Apply(uint64(i+1), payload)
		fmt.Println(res.Err, res.ProducerIDs, err)
	}
	// Output:
	// <nil> <nil> <nil>
	// <nil> <nil> <nil>
	// <nil> &{1 0 1000} <nil>
	// BROKER_ID_NOT_REGISTERED: The given broker ID was not registered. <nil> <nil>
}
