package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodesGVR are the cluster's Nodes, which capacity reads.
var NodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Node is what capacity reads of a Node.
type Node struct {
	Name   string
	Labels map[string]string
	// Ready is the Ready condition's status True; Unschedulable is
	// spec.unschedulable (a cordoned Node).
	Ready, Unschedulable bool
	// Allocatable is status.allocatable.
	Allocatable map[string]resource.Quantity
}

// Nodes lists every Node, sorted by name: one list call, served from the
// API server's watch cache (resourceVersion 0: as fresh as the cache, which
// is seconds at most) rather than read from etcd page by page.
func (r *Reader) Nodes(ctx context.Context) ([]Node, error) {
	l, err := r.dyn.Resource(NodesGVR).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]Node, 0, len(l.Items))
	for i := range l.Items {
		n, err := toNode(&l.Items[i])
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CanListNodes checks that the reader may list Nodes (one item).
func (r *Reader) CanListNodes(ctx context.Context) error {
	if _, err := r.dyn.Resource(NodesGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	return nil
}

func toNode(u *unstructured.Unstructured) (Node, error) {
	n := Node{Name: u.GetName(), Labels: u.GetLabels()}
	n.Unschedulable, _, _ = unstructured.NestedBool(u.Object, "spec", "unschedulable")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			n.Ready = true
		}
	}
	alloc, _, err := unstructured.NestedStringMap(u.Object, "status", "allocatable")
	if err != nil {
		return n, fmt.Errorf("node %s: status.allocatable: %w", n.Name, err)
	}
	n.Allocatable = make(map[string]resource.Quantity, len(alloc))
	for k, v := range alloc {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return n, fmt.Errorf("node %s: status.allocatable.%s=%q: %w", n.Name, k, v, err)
		}
		n.Allocatable[k] = q
	}
	return n, nil
}
