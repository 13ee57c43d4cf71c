package kafka

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/config"
)

// Broker resources: "" names the cluster-wide defaults and a broker id names that broker.
// Cairn keeps one set of dynamic broker properties for the whole cluster, so both names
// read and write the same values, reported with source DYNAMIC_DEFAULT_BROKER_CONFIG.
func (s *Server) checkBrokerResource(name string) *broker.Error {
	if name == "" || name == strconv.Itoa(int(s.b.NodeID())) {
		return nil
	}
	return &broker.Error{Code: kerr.InvalidRequest, Msg: "unknown broker id " + strconv.Quote(name)}
}

func handleDescribeConfigs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		if denied := s.configResourceDenial(ctx, kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); denied != nil {
			out.ErrorCode, out.ErrorMessage = denied.Code, strPtr(denied.Message)
			resp.Resources = append(resp.Resources, out)
			continue
		}
		var values []config.Value
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			topicOv, clusterOv, ok := s.b.TopicConfigOverrides(rr.ResourceName)
			if !ok {
				out.ErrorCode, out.ErrorMessage = kerr.UnknownTopicOrPartition.Code, strPtr("topic "+strconv.Quote(rr.ResourceName)+" does not exist")
				resp.Resources = append(resp.Resources, out)
				continue
			}
			values = config.DescribeTopic(topicOv, clusterOv)
		case kmsg.ConfigResourceTypeBroker:
			if err := s.checkBrokerResource(rr.ResourceName); err != nil {
				out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
				resp.Resources = append(resp.Resources, out)
				continue
			}
			values = config.DescribeBroker(s.b.NodeConfigValues(), s.b.ClusterConfigOverrides())
		default:
			out.ErrorCode, out.ErrorMessage = kerr.InvalidRequest.Code, strPtr("only topic and broker resources have configs")
			resp.Resources = append(resp.Resources, out)
			continue
		}
		want := map[string]bool{}
		for _, n := range rr.ConfigNames {
			want[n] = true
		}
		for _, v := range values {
			if rr.ConfigNames != nil && !want[v.Name] {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.IsSensitive = v.Name, strPtr(v.Value), v.ReadOnly, v.Sensitive
			c.Source = kmsg.ConfigSource(v.Source)
			c.IsDefault = v.Source == config.SourceDefault
			c.ConfigType = kmsg.ConfigType(v.Type)
			if req.IncludeDocumentation {
				c.Documentation = strPtr(v.Doc)
			}
			if req.IncludeSynonyms {
				for _, syn := range v.Synonyms {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name, cs.Value, cs.Source = syn.Name, strPtr(syn.Value), kmsg.ConfigSource(syn.Source)
					c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
				}
			}
			out.Configs = append(out.Configs, c)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return respond(resp)
}

// alterAttempts bounds how often alterResource builds a change again because the overrides
// moved on between reading them and the change reaching the controller: each attempt after
// the first reads a view that holds every change before the refused one.
const alterAttempts = 5

// alterResource validates a resource's complete new set of overrides and, unless
// validateOnly, stores it. All of a resource's changes apply, or none does. The new set is
// built from this broker's view of the current one and stored only if that view still
// holds when the change is applied, so two alters through different brokers (kadm sends
// each to any broker) never undo each other.
func (s *Server) alterResource(rtype kmsg.ConfigResourceType, name string, build func(current map[string]string, validate func(string, string) (string, error)) (map[string]string, error), validateOnly bool) *broker.Error {
	var err *broker.Error
	for attempt := range alterAttempts {
		if err = s.alterResourceOnce(rtype, name, build, validateOnly, attempt); !broker.IsConfigChanged(err) {
			return err
		}
	}
	err.Msg += fmt.Sprintf(" (%d attempts, each meeting a concurrent change; try again)", alterAttempts)
	return err
}

func (s *Server) alterResourceOnce(rtype kmsg.ConfigResourceType, name string, build func(current map[string]string, validate func(string, string) (string, error)) (map[string]string, error), validateOnly bool, attempt int) *broker.Error {
	switch rtype {
	case kmsg.ConfigResourceTypeTopic:
		cur, _, ok := s.b.TopicConfigOverrides(name)
		if !ok {
			return &broker.Error{Code: kerr.UnknownTopicOrPartition, Msg: "topic " + strconv.Quote(name) + " does not exist"}
		}
		next, err := build(maps.Clone(cur), config.ValidateTopic)
		if err != nil {
			return &broker.Error{Code: kerr.InvalidConfig, Msg: err.Error()}
		}
		if err := s.b.CheckTopicConfig(name, next); err != nil {
			return err
		}
		if validateOnly {
			return nil
		}
		s.hookBeforeConfigChange(attempt)
		return s.b.ReplaceTopicConfigIf(name, cur, next)
	case kmsg.ConfigResourceTypeBroker:
		if err := s.checkBrokerResource(name); err != nil {
			return err
		}
		cur := s.b.ClusterConfigOverrides()
		next, err := build(maps.Clone(cur), config.ValidateCluster)
		if err != nil {
			return &broker.Error{Code: kerr.InvalidConfig, Msg: err.Error()}
		}
		if err := s.b.CheckClusterConfig(next); err != nil {
			return err
		}
		if validateOnly {
			return nil
		}
		s.hookBeforeConfigChange(attempt)
		return s.b.ReplaceClusterConfigIf(cur, next)
	case kmsg.ConfigResourceTypeBrokerLogger:
		return &broker.Error{Code: kerr.InvalidRequest, Msg: "broker logger levels cannot be changed at run time"}
	}
	return &broker.Error{Code: kerr.InvalidRequest, Msg: "only topic and broker resources have configs"}
}

func (s *Server) hookBeforeConfigChange(attempt int) {
	if s.beforeConfigChange != nil {
		s.beforeConfigChange(attempt)
	}
}

// handleAlterConfigs is the legacy API: the request's set replaces every override.
func handleAlterConfigs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		if denied := s.configResourceDenial(ctx, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); denied != nil {
			out.ErrorCode, out.ErrorMessage = denied.Code, strPtr(denied.Message)
			resp.Resources = append(resp.Resources, out)
			continue
		}
		err := s.alterResource(rr.ResourceType, rr.ResourceName, func(_ map[string]string, validate func(string, string) (string, error)) (map[string]string, error) {
			next := make(map[string]string, len(rr.Configs))
			for _, c := range rr.Configs {
				if c.Value == nil {
					continue
				}
				v, err := validate(c.Name, *c.Value)
				if err != nil {
					return nil, err
				}
				next[c.Name] = v
			}
			return next, nil
		}, req.ValidateOnly)
		if err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return respond(resp)
}

func handleIncrementalAlterConfigs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		if denied := s.configResourceDenial(ctx, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); denied != nil {
			out.ErrorCode, out.ErrorMessage = denied.Code, strPtr(denied.Message)
			resp.Resources = append(resp.Resources, out)
			continue
		}
		ops := make([]config.Op, 0, len(rr.Configs))
		for _, c := range rr.Configs {
			ops = append(ops, config.Op{Name: c.Name, Op: int8(c.Op), Value: c.Value})
		}
		err := s.alterResource(rr.ResourceType, rr.ResourceName, func(cur map[string]string, validate func(string, string) (string, error)) (map[string]string, error) {
			return config.ApplyIncremental(cur, ops, validate)
		}, req.ValidateOnly)
		if err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return respond(resp)
}
