// Command planner-plan asks a planner-svc server for an evidence plan and verifies its hash.
//
// Usage:
//
//	planner-plan [-addr 127.0.0.1:50151] [-budget N] [-depth 1] [-model M] [-timeout 30s] "question"
//
// The request is the one the Python client sends for a question: the question once (both recall
// legs search with it), hop expansion depth 1, server defaults for k and limit. The plan hash is
// recomputed locally (plan hash v1, docs/plan-hash.md); the command prints one line per
// span (source, kind, tokens, weight), the totals, then "hash verified: b3:...". It exits 1 on
// an RPC error (printing the gRPC code, message and any field violation or error reason), on a
// plan whose hash does not verify, and 2 on bad usage. PLANNER_SVC_AUTH_TOKEN, when set, is sent
// as a bearer token. The connection is plaintext (loopback or a trusted network).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/planner-svc/planner-svc/clients/go/gen/planner/v1"
	"github.com/planner-svc/planner-svc/clients/go/planhash"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	addr         string
	budgetTokens int64 // < 0: server default
	expandDepth  uint
	model        string
	timeout      time.Duration
	question     string
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("planner-plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:50151", "server address host:port")
	fs.Int64Var(&o.budgetTokens, "budget", -1, "budget in tokens (negative: server default)")
	fs.UintVar(&o.expandDepth, "depth", 1, "hop expansion depth, 0..2")
	fs.StringVar(&o.model, "model", "", "model for exact token accounting (empty: server default)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "deadline of the Plan call")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: planner-plan [flags] "question"`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() != 1 || strings.TrimSpace(fs.Arg(0)) == "" {
		fs.Usage()
		return o, errors.New("expected exactly one non-empty question argument")
	}
	o.question = fs.Arg(0)
	return o, nil
}

// questionRequest builds the default request for a natural-language question: the question
// once (both recall legs search with it), server defaults for k and limit.
func questionRequest(o options) *plannerv1.PlanRequest {
	req := &plannerv1.PlanRequest{
		Question:    o.question,
		ExpandDepth: uint32(o.expandDepth),
		Model:       o.model,
	}
	if o.budgetTokens >= 0 {
		req.BudgetTokens = proto.Uint64(uint64(o.budgetTokens))
	}
	return req
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "planner-plan:", err)
		return 2
	}
	conn, err := grpc.NewClient(o.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(stderr, "planner-plan:", err)
		return 2
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if token := os.Getenv("PLANNER_SVC_AUTH_TOKEN"); token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	resp, err := plannerv1.NewEvidencePlannerServiceClient(conn).Plan(ctx, questionRequest(o))
	if err != nil {
		fmt.Fprint(stderr, describeError(err))
		return 1
	}
	plan := resp.GetPlan()
	if err := planhash.Verify(plan); err != nil {
		fmt.Fprintln(stderr, "planner-plan:", err)
		return 1
	}
	printPlan(stdout, plan)
	return 0
}

// describeError renders a Plan error: the gRPC code and message, then one line per field
// violation (google.rpc.BadRequest) and per error reason (google.rpc.ErrorInfo).
func describeError(err error) string {
	st := status.Convert(err)
	var b strings.Builder
	fmt.Fprintf(&b, "planner-plan: Plan failed: %s: %s\n", st.Code(), st.Message())
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(&b, "field violation: %s: %s\n", v.GetField(), v.GetDescription())
			}
		case *errdetails.ErrorInfo:
			fmt.Fprintf(&b, "reason: %s (domain %s)\n", d.GetReason(), d.GetDomain())
		}
	}
	return b.String()
}

// locationText renders where a span sits in its original document on one line: "p. 2",
// "cell 4", the heading path joined by " › ", joined by " · " in that order ("p. 2 · Results");
// empty when the span has no location.
func locationText(loc *plannerv1.SpanLocation) string {
	if loc == nil {
		return ""
	}
	var parts []string
	if loc.Page != nil {
		parts = append(parts, fmt.Sprintf("p. %d", loc.GetPage()))
	}
	if loc.CellIndex != nil {
		parts = append(parts, fmt.Sprintf("cell %d", loc.GetCellIndex()))
	}
	if len(loc.GetHeadingPath()) > 0 {
		parts = append(parts, strings.Join(loc.GetHeadingPath(), " \u203a "))
	}
	return strings.Join(parts, " \u00b7 ")
}

// printPlan writes one row per span (source, kind, location, tokens, weight as the shortest
// decimal that round-trips), the totals, and the verified hash.
func printPlan(w io.Writer, plan *plannerv1.EvidencePlan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "source\tkind\tlocation\ttokens\tweight")
	for _, s := range plan.GetSpans() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.GetSpan().GetSourceId(), s.GetKind(),
			locationText(s.GetLocation()), s.GetTokens(), strconv.FormatFloat(s.GetWeight(), 'g', -1, 64))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d spans, used %d/%d tokens\n", len(plan.GetSpans()), plan.GetUsed(), plan.GetBudget())
	fmt.Fprintf(w, "hash verified: %s\n", plan.GetPlanHash())
}
