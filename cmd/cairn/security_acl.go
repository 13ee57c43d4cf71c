package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `cairn security acl create|delete|list`: Kafka ACLs through CreateAcls, DeleteAcls and
// DescribeAcls, so the commands work against Kafka as well as Cairn. The flags follow
// kafka-acls.sh: --allow-principal/--deny-principal with --allow-host/--deny-host,
// --operation, and the resource flags --topic, --group, --cluster, --transactional-id with
// --resource-pattern-type. The requests are built here (not with kadm's builder) so that
// one command is one request whose answer maps back to each ACL.

// aclFlags are the flags the three subcommands share.
type aclFlags struct {
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
	allow, deny            []string
	allowHosts, denyHosts  []string
	operations             []string
}

func (f *aclFlags) registerResources(cmd *cobra.Command, patternDefault, patternHelp string) {
	cmd.Flags().StringSliceVar(&f.topics, "topic", nil, "topic name (repeat or comma-separate; \"*\" is every topic)")
	cmd.Flags().StringSliceVar(&f.groups, "group", nil, "consumer group id (repeat or comma-separate; \"*\" is every group)")
	cmd.Flags().StringSliceVar(&f.txnIDs, "transactional-id", nil, "transactional id (repeat or comma-separate)")
	cmd.Flags().BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	cmd.Flags().StringVar(&f.pattern, "resource-pattern-type", patternDefault, patternHelp)
}

func (f *aclFlags) registerPrincipals(cmd *cobra.Command, hostDefault []string, hostHelp string) {
	cmd.Flags().StringArrayVar(&f.allow, "allow-principal", nil, "principal to allow, Type:name (User:alice, User:*); repeatable")
	cmd.Flags().StringArrayVar(&f.deny, "deny-principal", nil, "principal to deny, Type:name; repeatable")
	cmd.Flags().StringArrayVar(&f.allowHosts, "allow-host", hostDefault, "host (IP address or *) of the allow principals; "+hostHelp)
	cmd.Flags().StringArrayVar(&f.denyHosts, "deny-host", hostDefault, "host (IP address or *) of the deny principals; "+hostHelp)
}

type aclResource struct {
	typ  kmsg.ACLResourceType
	name string
}

// resources lists the resources the flags name, in flag order.
func (f *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, t := range f.topics {
		out = append(out, aclResource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range f.groups {
		out = append(out, aclResource{kmsg.ACLResourceTypeGroup, g})
	}
	if f.cluster {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, "kafka-cluster"})
	}
	for _, x := range f.txnIDs {
		out = append(out, aclResource{kmsg.ACLResourceTypeTransactionalId, x})
	}
	return out
}

func parsePattern(s string, allowed ...kmsg.ACLResourcePatternType) (kmsg.ACLResourcePatternType, error) {
	p, err := kmsg.ParseACLResourcePatternType(s)
	for _, a := range allowed {
		if err == nil && p == a {
			return p, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = strings.ToLower(a.String())
	}
	return 0, fmt.Errorf("--resource-pattern-type %q is not one of %s", s, strings.Join(names, ", "))
}

// parseOperations parses --operation values, or gives def when there are none.
func parseOperations(ss []string, def kmsg.ACLOperation) ([]kmsg.ACLOperation, error) {
	if len(ss) == 0 {
		return []kmsg.ACLOperation{def}, nil
	}
	var out []kmsg.ACLOperation
	for _, s := range ss {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil {
			return nil, fmt.Errorf("--operation %q is not a Kafka ACL operation (read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write, all)", s)
		}
		out = append(out, op)
	}
	return out, nil
}

// aclEntry is one principal, host and permission the flags name.
type aclEntry struct {
	principal, host string
	perm            kmsg.ACLPermissionType
}

func (f *aclFlags) entries() []aclEntry {
	var out []aclEntry
	for _, p := range f.allow {
		for _, h := range f.allowHosts {
			out = append(out, aclEntry{p, h, kmsg.ACLPermissionTypeAllow})
		}
	}
	for _, p := range f.deny {
		for _, h := range f.denyHosts {
			out = append(out, aclEntry{p, h, kmsg.ACLPermissionTypeDeny})
		}
	}
	return out
}

// kafka runs fn with a client of the seed brokers, within --timeout.
func (sf *securityFlags) kafka(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client) error) error {
	if sf.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", sf.timeout)
	}
	cl, err := sf.newClient(cmd)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmdContext(cmd), sf.timeout)
	defer cancel()
	return fn(ctx, cl)
}

func newACLCmd(sf *securityFlags) *cobra.Command {
	acl := &cobra.Command{Use: "acl", Short: "Create, delete and list Kafka ACLs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	acl.AddCommand(newACLCreateCmd(sf), newACLDeleteCmd(sf), newACLListCmd(sf))
	return acl
}

func aclString(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) string {
	return fmt.Sprintf("%s %s from %s to %s %s:%s (%s)", strings.ToLower(perm.String()), principal, host,
		strings.ToLower(op.String()), strings.ToLower(rt.String()), name, strings.ToLower(pt.String()))
}

func newACLCreateCmd(sf *securityFlags) *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create ACLs: every --allow-principal/--deny-principal, for every --operation, on every resource named",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := parsePattern(f.pattern, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed)
			if err != nil {
				return err
			}
			ops, err := parseOperations(f.operations, kmsg.ACLOperationAll)
			if err != nil {
				return err
			}
			res, entries := f.resources(), f.entries()
			if len(res) == 0 {
				return errors.New("no resource: give --topic, --group, --cluster or --transactional-id")
			}
			if len(entries) == 0 {
				return errors.New("no principal: give --allow-principal or --deny-principal")
			}
			req := kmsg.NewPtrCreateACLsRequest()
			for _, r := range res {
				for _, e := range entries {
					for _, op := range ops {
						c := kmsg.NewCreateACLsRequestCreation()
						c.ResourceType, c.ResourceName, c.ResourcePatternType = r.typ, r.name, pt
						c.Principal, c.Host, c.Operation, c.PermissionType = e.principal, e.host, op, e.perm
						req.Creations = append(req.Creations, c)
					}
				}
			}
			return sf.kafka(cmd, func(ctx context.Context, cl *kgo.Client) error {
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return requestError(cmd, &sf.clientFlags, "creating ACLs", err)
				}
				if len(resp.Results) != len(req.Creations) {
					return fmt.Errorf("creating ACLs: %d results for %d ACLs", len(resp.Results), len(req.Creations))
				}
				var failed error
				for i, r := range resp.Results {
					c := req.Creations[i]
					desc := aclString(c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType)
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						msg := ""
						if r.ErrorMessage != nil {
							msg = *r.ErrorMessage
						}
						failed = errors.Join(failed, brokerError(fmt.Errorf("ACL %s: %w", desc, err), msg))
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "created: %s\n", desc)
				}
				return failed
			})
		},
	}
	f.registerResources(cmd, "literal", "literal (the name exactly, or * for all) or prefixed (every name starting with it)")
	f.registerPrincipals(cmd, []string{"*"}, "repeatable, default *")
	cmd.Flags().StringSliceVar(&f.operations, "operation", nil, "operation (read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write, all); repeatable, default all")
	return cmd
}

// filters builds the DeleteAcls/DescribeAcls filters of the flags: the resources named (or
// every resource), crossed with the principals and hosts named (or any) and the operations
// named (or any).
func (f *aclFlags) filters(pt kmsg.ACLResourcePatternType) ([]kmsg.DeleteACLsRequestFilter, error) {
	ops, err := parseOperations(f.operations, kmsg.ACLOperationAny)
	if err != nil {
		return nil, err
	}
	type who struct {
		principal, host *string
		perm            kmsg.ACLPermissionType
	}
	var whos []who
	str := func(s string) *string { return &s }
	add := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
		for _, p := range principals {
			if len(hosts) == 0 {
				whos = append(whos, who{str(p), nil, perm})
			}
			for _, h := range hosts {
				whos = append(whos, who{str(p), str(h), perm})
			}
		}
	}
	add(f.allow, f.allowHosts, kmsg.ACLPermissionTypeAllow)
	add(f.deny, f.denyHosts, kmsg.ACLPermissionTypeDeny)
	if len(whos) == 0 {
		whos = []who{{perm: kmsg.ACLPermissionTypeAny}}
	}
	type res struct {
		typ  kmsg.ACLResourceType
		name *string
	}
	var rs []res
	for _, r := range f.resources() {
		rs = append(rs, res{r.typ, str(r.name)})
	}
	if len(rs) == 0 {
		rs = []res{{typ: kmsg.ACLResourceTypeAny}}
	}
	var out []kmsg.DeleteACLsRequestFilter
	for _, r := range rs {
		for _, w := range whos {
			for _, op := range ops {
				fl := kmsg.NewDeleteACLsRequestFilter()
				fl.ResourceType, fl.ResourceName, fl.ResourcePatternType = r.typ, r.name, pt
				fl.Principal, fl.Host, fl.Operation, fl.PermissionType = w.principal, w.host, op, w.perm
				out = append(out, fl)
			}
		}
	}
	return out, nil
}

func newACLDeleteCmd(sf *securityFlags) *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the ACLs on the resources named, narrowed by principal, host and operation when given",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := parsePattern(f.pattern, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed,
				kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch)
			if err != nil {
				return err
			}
			if len(f.resources()) == 0 {
				return errors.New("no resource: give --topic, --group, --cluster or --transactional-id (\"*\" names the wildcard ACLs)")
			}
			req := kmsg.NewPtrDeleteACLsRequest()
			if req.Filters, err = f.filters(pt); err != nil {
				return err
			}
			return sf.kafka(cmd, func(ctx context.Context, cl *kgo.Client) error {
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return requestError(cmd, &sf.clientFlags, "deleting ACLs", err)
				}
				var failed error
				n := 0
				for _, r := range resp.Results {
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						msg := ""
						if r.ErrorMessage != nil {
							msg = *r.ErrorMessage
						}
						failed = errors.Join(failed, brokerError(fmt.Errorf("deleting ACLs: %w", err), msg))
						continue
					}
					for _, m := range r.MatchingACLs {
						n++
						fmt.Fprintf(cmd.OutOrStdout(), "deleted: %s\n", aclString(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
					}
				}
				if failed == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%d ACLs deleted\n", n)
				}
				return failed
			})
		},
	}
	f.registerResources(cmd, "literal", "literal, prefixed, any (every pattern of the name) or match (every ACL that applies to the name)")
	f.registerPrincipals(cmd, nil, "repeatable, default any")
	cmd.Flags().StringSliceVar(&f.operations, "operation", nil, "delete only ACLs of this operation; repeatable, default any")
	return cmd
}

func newACLListCmd(sf *securityFlags) *cobra.Command {
	f := &aclFlags{}
	var principal string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List ACLs, all or those on the resources named, of --principal when given",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pt, err := parsePattern(f.pattern, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed,
				kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch)
			if err != nil {
				return err
			}
			if principal != "" {
				f.allow, f.deny = []string{principal}, []string{principal}
			}
			filters, err := f.filters(pt)
			if err != nil {
				return err
			}
			return sf.kafka(cmd, func(ctx context.Context, cl *kgo.Client) error {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
				for _, fl := range filters {
					req := kmsg.NewPtrDescribeACLsRequest()
					req.ResourceType, req.ResourceName, req.ResourcePatternType = fl.ResourceType, fl.ResourceName, fl.ResourcePatternType
					req.Principal, req.Host, req.Operation, req.PermissionType = fl.Principal, fl.Host, fl.Operation, fl.PermissionType
					resp, err := req.RequestWith(ctx, cl)
					if err != nil {
						return requestError(cmd, &sf.clientFlags, "listing ACLs", err)
					}
					if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
						msg := ""
						if resp.ErrorMessage != nil {
							msg = *resp.ErrorMessage
						}
						return brokerError(fmt.Errorf("listing ACLs: %w", err), msg)
					}
					for _, r := range resp.Resources {
						for _, a := range r.ACLs {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.ToLower(r.ResourceType.String()), r.ResourceName,
								strings.ToLower(r.ResourcePatternType.String()), a.Principal, a.Host,
								strings.ToLower(a.Operation.String()), strings.ToLower(a.PermissionType.String()))
						}
					}
				}
				return tw.Flush()
			})
		},
	}
	f.registerResources(cmd, "any", "any (every pattern), match (every ACL that applies to the names), literal or prefixed")
	cmd.Flags().StringVar(&principal, "principal", "", "list only this principal's ACLs, Type:name")
	cmd.Flags().StringSliceVar(&f.operations, "operation", nil, "list only ACLs of this operation; repeatable, default any")
	return cmd
}
