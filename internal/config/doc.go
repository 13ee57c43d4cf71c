// Package config owns Cairn's property registry: every node, cluster and topic property
// Cairn accepts, with its type, default, valid range, scope and what enforces it. It
// validates values, resolves effective topic and cluster settings with their sources, and
// generates docs/configuration.md. It must not act on any value itself; it stores no state
// beyond what callers hand it.
//
// # Honesty rule (DESIGN.md §4)
//
// A property the registry accepts is enforced by the component named in its EnforcedBy
// field. Everything else is refused with an *Error, which the Kafka layer answers with
// INVALID_CONFIG and the error's message. The message tells an unknown name apart from a
// well-known Kafka property that Cairn refuses (see RefusedProperties), and from a known
// property set in the wrong scope.
//
// # Scopes and resolution
//
// Node properties are fixed when `cairn start` runs (flags, YAML or environment) and are
// read-only afterwards. Cluster properties are cluster-wide dynamic values, set with
// AlterConfigs or IncrementalAlterConfigs on a broker resource. Topic properties are set per
// topic; each one takes its default from a cluster property (its Kafka "synonym"). A topic's
// effective value is its own override, else the cluster override, else the built-in
// default. The one exception is write caching: write_caching_default=disabled turns it off
// for every topic whatever the topic says.
//
// Callers own storage of overrides: they validate values on the way in (ValidateTopic,
// ValidateCluster, ApplyIncremental), keep the canonical strings those return, and hand the
// maps back to ResolveTopic, ResolveCluster, DescribeTopic and DescribeBroker.
//
// docs/configuration.md is generated from the registry by
// `go run ./internal/config/cmd/gendocs`; TestConfigurationDocUpToDate fails when it drifts.
package config
