// Command planner-plan asks a planner-svc server for an evidence plan and verifies its hash.
//
// Usage:
//
//	planner-plan [-addr 127.0.0.1:50151] [-budget N] [-depth 1] [-model M] [-timeout 30s]
//	             [-tls-ca FILE] [-tls-cert FILE -tls-key FILE] "question"
//
// The request is the one the Python client sends for a question: the question once (both recall
// legs search with it), hop expansion depth 1, server defaults for k and limit. The plan hash is
// recomputed locally (plan hash v1, docs/plan-hash.md); the command prints one line per
// span (source, kind, tokens, weight), the totals, then "hash verified: b3:...". On an RPC error
// it prints the gRPC code, message and any field violation or error reason. Exit codes are
// planner-svc plan's: 4 when the server declines for insufficient evidence (FailedPrecondition
// with reason INSUFFICIENT_EVIDENCE), 3 when the service is unavailable (Unavailable,
// DeadlineExceeded: retry later or elsewhere), 1 on any other RPC error and on a plan whose
// hash does not verify, 2 on bad usage, before any call: a flag of the wrong form, a timeout
// outside (0s, 1h], a budget outside 1..10000000 or a depth outside 0..2 (planner-svc plan's
// bounds; a negative budget, the flag's default, asks for the server's default budget).
// PLANNER_SVC_AUTH_TOKEN, when set, is sent as a bearer token. The connection is plaintext (loopback or a trusted network) unless a TLS
// flag is given: -tls-ca verifies the server with those PEM authorities (default: the system's
// roots), -tls-cert/-tls-key present a client certificate to a server that requires one
// (serve --tls-client-ca). Responses of any size are accepted (grpc-go's default refuses more
// than 4 MiB; a server may send up to its own limit, 16 MiB by default).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
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

// The bounds planner-svc plan checks before any call (planner_svc/core/limits.py:
// BUDGET_TOKENS, EXPAND_DEPTH), the ones the server enforces.
const (
	minBudgetTokens = 1          // tokens
	maxBudgetTokens = 10_000_000 // tokens
	maxExpandDepth  = 2          // hops
)

// options are the parsed command line.
type options struct {
	addr         string
	budgetTokens int64 // < 0: server default
	expandDepth  uint64
	model        string
	timeout      time.Duration
	tlsCA        string // PEM authorities for the server's certificate
	tlsCert      string // PEM client certificate chain
	tlsKey       string // PEM client private key
	question     string
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("planner-plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:50151", "server address host:port")
	fs.Int64Var(&o.budgetTokens, "budget", -1, fmt.Sprintf(
		"budget in tokens, %d..%d (negative: server default)", minBudgetTokens, maxBudgetTokens))
	fs.Uint64Var(&o.expandDepth, "depth", 1, fmt.Sprintf("hop expansion depth, 0..%d", maxExpandDepth))
	fs.StringVar(&o.model, "model", "", "model for exact token accounting (empty: server default)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "deadline of the Plan call")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM authorities to verify the server with (enables TLS)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM client certificate chain (with -tls-key; enables TLS)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM client private key")
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
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, errors.New("-tls-cert and -tls-key must be given together")
	}
	if o.timeout <= 0 || o.timeout > time.Hour {
		// as planner-svc plan's --timeout: a deadline already passed would read as "retry" (3)
		return o, fmt.Errorf("-timeout %s is outside (0s, 1h]", o.timeout)
	}
	if o.budgetTokens >= 0 && (o.budgetTokens < minBudgetTokens || o.budgetTokens > maxBudgetTokens) {
		return o, fmt.Errorf("-budget %d is outside %d..%d (negative or omitted: the server's default)",
			o.budgetTokens, minBudgetTokens, maxBudgetTokens)
	}
	if o.expandDepth > maxExpandDepth {
		return o, fmt.Errorf("-depth %d is outside 0..%d", o.expandDepth, maxExpandDepth)
	}
	o.question = fs.Arg(0)
	return o, nil
}

// transportCredentials are plaintext without TLS flags, else TLS with the given authorities
// and client certificate.
func transportCredentials(o options) (credentials.TransportCredentials, error) {
	if o.tlsCA == "" && o.tlsCert == "" {
		return insecure.NewCredentials(), nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("cannot read -tls-ca: %w", err)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca %s holds no PEM certificate", o.tlsCA)
		}
	}
	if o.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("cannot load -tls-cert/-tls-key: %w", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(config), nil
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
	creds, err := transportCredentials(o)
	if err != nil {
		fmt.Fprintln(stderr, "planner-plan:", err)
		return 2
	}
	conn, err := grpc.NewClient(o.addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
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
		return errorExit(err)
	}
	plan := resp.GetPlan()
	if err := planhash.Verify(plan); err != nil {
		fmt.Fprintln(stderr, "planner-plan:", err)
		return 1
	}
	printPlan(stdout, plan)
	return 0
}

// errorExit is the exit code of a Plan error: 3 for a condition to retry (Unavailable,
// DeadlineExceeded), 4 for a decline for insufficient evidence, else 1.
func errorExit(err error) int {
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return 3
	case codes.FailedPrecondition:
		for _, detail := range st.Details() {
			if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetReason() == "INSUFFICIENT_EVIDENCE" {
				return 4
			}
		}
	}
	return 1
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
