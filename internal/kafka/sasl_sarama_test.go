package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	xscram "github.com/xdg-go/scram"
)

// saramaSCRAM adapts xdg-go/scram's client conversation to sarama's SCRAMClient.
type saramaSCRAM struct {
	h    xscram.HashGeneratorFcn
	conv *xscram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := c.h.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *saramaSCRAM) Done() bool                            { return c.conv.Done() }

// sarama produces and consumes over SASL in both flows it speaks: the v0 handshake with
// bare tokens, and SaslAuthenticate after a v1 handshake; a wrong password fails with
// SASL_AUTHENTICATION_FAILED in the second.
func TestSASLWithSarama(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")
	config := func(mech string, version int16, pw string) *sarama.Config {
		c := sarama.NewConfig()
		c.Version = sarama.V2_8_0_0
		c.Net.SASL.Enable, c.Net.SASL.Handshake = true, true
		c.Net.SASL.Mechanism, c.Net.SASL.Version = sarama.SASLMechanism(mech), version
		c.Net.SASL.User, c.Net.SASL.Password = "alice", pw
		switch mech {
		case sarama.SASLTypeSCRAMSHA256:
			c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{h: xscram.SHA256} }
		case sarama.SASLTypeSCRAMSHA512:
			c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{h: xscram.SHA512} }
		}
		c.Producer.Return.Successes = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Metadata.Retry.Max = 0
		// sarama sends ApiVersions first only in the v1 flow, as old clients did.
		c.ApiVersionsRequest = version != sarama.SASLHandshakeV0
		return c
	}
	for _, tc := range []struct {
		mech    string
		version int16
	}{
		{sarama.SASLTypePlaintext, sarama.SASLHandshakeV0},
		{sarama.SASLTypeSCRAMSHA256, sarama.SASLHandshakeV0},
		{sarama.SASLTypePlaintext, sarama.SASLHandshakeV1},
		{sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1},
	} {
		t.Run(fmt.Sprintf("%s-v%d", tc.mech, tc.version), func(t *testing.T) {
			topic := fmt.Sprintf("sarama-%s-%d", tc.mech, tc.version)
			cl, err := sarama.NewClient([]string{sb.saslAddr}, config(tc.mech, tc.version, "alice-secret"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm, err := sarama.NewClusterAdminFromClient(cl)
			if err != nil {
				t.Fatal(err)
			}
			if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				t.Fatal(err)
			}
			prod, err := sarama.NewSyncProducerFromClient(cl)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("hello")}); err != nil {
				t.Fatal(err)
			}
			cons, err := sarama.NewConsumerFromClient(cl)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			select {
			case m := <-pc.Messages():
				if string(m.Value) != "hello" {
					t.Fatalf("consumed %q", m.Value)
				}
			case err := <-pc.Errors():
				t.Fatal(err)
			}
		})
	}
	_, err := sarama.NewClient([]string{sb.saslAddr}, config(sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, "wrong"))
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		t.Fatalf("sarama with a wrong password: %v", err)
	}
}
