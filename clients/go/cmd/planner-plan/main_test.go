package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/planner-svc/planner-svc/clients/go/gen/planner/v1"
	"github.com/planner-svc/planner-svc/clients/go/planhash"
)

// fakePlanner answers Plan with a fixed plan or error and records the request it got.
type fakePlanner struct {
	plannerv1.UnimplementedEvidencePlannerServiceServer
	plan *plannerv1.EvidencePlan
	err  error
	got  *plannerv1.PlanRequest
}

func (f *fakePlanner) Plan(_ context.Context, req *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	f.got = req
	if f.err != nil {
		return nil, f.err
	}
	return &plannerv1.PlanResponse{Plan: f.plan}, nil
}

// serve starts f on a loopback ephemeral port and returns its address.
func serve(t *testing.T, f *fakePlanner) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	plannerv1.RegisterEvidencePlannerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func samplePlan() *plannerv1.EvidencePlan {
	plan := &plannerv1.EvidencePlan{
		PlanModel: "v1",
		Budget:    450,
		Used:      57,
		Spans: []*plannerv1.PlannedSpan{{
			Span:   &plannerv1.SpanRef{SourceId: "wiki/Capra_(genus)", SourceVersionTx: 1_800_000_000_000_000, Start: 120, End: 400},
			Kind:   "paragraph",
			Class:  plannerv1.SpanClass_SPAN_CLASS_TRUTH,
			Weight: math.Nextafter(0.3, 1), // 0.1 + 0.2 in float64 arithmetic
			Tokens: 57,
			Text:   "Goat domestication occurred in Iran.",
			Location: &plannerv1.SpanLocation{
				Page: proto.Uint32(3), HeadingPath: []string{"Goat", "Domestication"},
			},
		}},
	}
	plan.PlanHash = planhash.Hash(plan)
	return plan
}

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanIsRequestedPrintedAndVerified(t *testing.T) {
	fake := &fakePlanner{plan: samplePlan()}
	addr := serve(t, fake)
	code, out, errOut := runCLI("-addr", addr, "-budget", "500", "Where were goats domesticated?")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := &plannerv1.PlanRequest{
		Question:     "Where were goats domesticated?",
		ExpandDepth:  1,
		BudgetTokens: proto.Uint64(500),
	}
	if !proto.Equal(fake.got, want) {
		t.Fatalf("request = %v, want %v", fake.got, want)
	}
	for _, line := range []string{
		"wiki/Capra_(genus)  paragraph  p. 3 · Goat › Domestication  57      0.30000000000000004",
		"1 spans, used 57/450 tokens",
		"hash verified: " + fake.plan.PlanHash,
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

func TestLocationText(t *testing.T) {
	cell := uint32(0)
	for _, c := range []struct {
		loc  *plannerv1.SpanLocation
		want string
	}{
		{nil, ""},
		{&plannerv1.SpanLocation{}, ""},
		{&plannerv1.SpanLocation{Page: proto.Uint32(12)}, "p. 12"},
		{&plannerv1.SpanLocation{CellIndex: &cell, HeadingPath: []string{"Finding"}}, "cell 0 · Finding"},
		{&plannerv1.SpanLocation{HeadingPath: []string{"Varroa", "Monitoring"}}, "Varroa › Monitoring"},
	} {
		if got := locationText(c.loc); got != c.want {
			t.Errorf("locationText(%v) = %q, want %q", c.loc, got, c.want)
		}
	}
}

func TestPlanLargerThanGrpcDefaultIsReceived(t *testing.T) {
	plan := samplePlan()
	text := strings.Repeat("x", 65536)
	// 100 spans of 64 KiB (6.5 MB, over grpc-go's 4 MiB default receive limit), sorted before
	// the sample's wiki/ span.
	var big []*plannerv1.PlannedSpan
	for i := 0; i < 100; i++ {
		big = append(big, &plannerv1.PlannedSpan{
			Span:   &plannerv1.SpanRef{SourceId: fmt.Sprintf("big/%03d", i), SourceVersionTx: 1, End: 65536},
			Kind:   "paragraph",
			Class:  plannerv1.SpanClass_SPAN_CLASS_TRUTH,
			Weight: 0.5,
			Tokens: 1,
			Text:   text,
		})
	}
	plan.Spans = append(big, plan.Spans...)
	plan.Used += 100
	plan.PlanHash = planhash.Hash(plan)
	if size := proto.Size(plan); size <= 4<<20 {
		t.Fatalf("plan is only %d bytes", size)
	}
	code, out, errOut := runCLI("-addr", serve(t, &fakePlanner{plan: plan}), "q")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "101 spans, used 157/450 tokens\n") {
		t.Fatalf("output lacks the totals:\n%s", out[len(out)-300:])
	}
}

func TestServerDefaultBudgetLeavesTheFieldUnset(t *testing.T) {
	fake := &fakePlanner{plan: samplePlan()}
	if code, _, errOut := runCLI("-addr", serve(t, fake), "-depth", "0", "q"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if fake.got.BudgetTokens != nil || fake.got.GetExpandDepth() != 0 {
		t.Fatalf("request = %v", fake.got)
	}
}

func TestTamperedPlanFailsVerification(t *testing.T) {
	plan := samplePlan()
	sent := plan.PlanHash
	plan.Spans[0].Tokens++ // the server's hash no longer matches the spans
	code, out, errOut := runCLI("-addr", serve(t, &fakePlanner{plan: plan}), "q")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, sent) || !strings.Contains(errOut, planhash.Hash(plan)) {
		t.Fatalf("stderr does not name both hashes: %q", errOut)
	}
}

func TestInvalidArgumentPrintsCodeAndFieldViolation(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "invalid expand_depth: must be in 0..2, got 5").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{
			Field: "expand_depth", Description: "must be in 0..2, got 5",
		}}})
	if err != nil {
		t.Fatal(err)
	}
	// the CLI refuses -depth 5 itself (TestOutOfRangeBudgetAndDepthAreUsageErrors); a server's
	// refusal is printed as it comes, whatever was sent
	code, out, errOut := runCLI("-addr", serve(t, &fakePlanner{err: st.Err()}), "q")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	want := "planner-plan: Plan failed: InvalidArgument: invalid expand_depth: must be in 0..2, got 5\n" +
		"field violation: expand_depth: must be in 0..2, got 5\n"
	if errOut != want {
		t.Fatalf("stderr = %q, want %q", errOut, want)
	}
}

func TestFailedPreconditionPrintsReason(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "nothing recalled").WithDetails(
		&errdetails.ErrorInfo{Reason: "INSUFFICIENT_EVIDENCE", Domain: "planner.plannersvc.dev"})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("-addr", serve(t, &fakePlanner{err: st.Err()}), "q")
	if code != 4 || !strings.Contains(errOut, "FailedPrecondition: nothing recalled\nreason: INSUFFICIENT_EVIDENCE") {
		t.Fatalf("exit %d, stderr %q; want 4 (declined)", code, errOut)
	}
	// a failed precondition without the reason, or the reason under another code, is a refusal
	info := &errdetails.ErrorInfo{Reason: "INSUFFICIENT_EVIDENCE", Domain: "planner.plannersvc.dev"}
	otherInfo := &errdetails.ErrorInfo{Reason: "STORE_READ_ONLY", Domain: "planner.plannersvc.dev"}
	for name, st := range map[string]*status.Status{
		"no details":         status.New(codes.FailedPrecondition, "store is read-only"),
		"another reason":     mustDetail(t, status.New(codes.FailedPrecondition, "x"), otherInfo),
		"reason, other code": mustDetail(t, status.New(codes.InvalidArgument, "x"), info),
	} {
		if code, _, _ := runCLI("-addr", serve(t, &fakePlanner{err: st.Err()}), "q"); code != 1 {
			t.Errorf("%s: exit %d; want 1", name, code)
		}
	}
}

func mustDetail(t *testing.T, st *status.Status, detail *errdetails.ErrorInfo) *status.Status {
	t.Helper()
	with, err := st.WithDetails(detail)
	if err != nil {
		t.Fatal(err)
	}
	return with
}

func TestUnavailableAndDeadlineExceededExit3(t *testing.T) {
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded} {
		code, _, errOut := runCLI("-addr", serve(t, &fakePlanner{err: status.New(c, "later").Err()}), "q")
		if code != 3 || !strings.Contains(errOut, c.String()+": later") {
			t.Fatalf("%s: exit %d, stderr %q; want 3", c, code, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"a", "b"}, {"-budget", "x", "q"}, {"  "},
		{"-timeout", "0s", "q"}, {"-timeout", "-1s", "q"}, {"-timeout", "2h", "q"}} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("args %q: exit %d, want 2", args, code)
		}
	}
}

func TestOutOfRangeBudgetAndDepthAreUsageErrors(t *testing.T) {
	fake := &fakePlanner{plan: samplePlan()}
	addr := serve(t, fake)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-budget", "0"}, "planner-plan: -budget 0 is outside 1..10000000 (negative or omitted: the server's default)\n"},
		{[]string{"-budget", "10000001"}, "planner-plan: -budget 10000001 is outside 1..10000000 (negative or omitted: the server's default)\n"},
		{[]string{"-depth", "3"}, "planner-plan: -depth 3 is outside 0..2\n"},
		{[]string{"-depth", "4294967296"}, "planner-plan: -depth 4294967296 is outside 0..2\n"}, // not sent as 0
	} {
		code, out, errOut := runCLI(append(append([]string{"-addr", addr}, c.args...), "q")...)
		if code != 2 || out != "" || errOut != c.want {
			t.Errorf("args %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	if fake.got != nil {
		t.Fatalf("a refused flag reached the server: %v", fake.got)
	}
}

func TestBudgetAndDepthAtTheirBoundsAreSent(t *testing.T) {
	for _, c := range []struct {
		args   []string
		budget *uint64
		depth  uint32
	}{
		{[]string{"-budget", "1"}, proto.Uint64(1), 1},
		{[]string{"-budget", "10000000"}, proto.Uint64(10_000_000), 1},
		{[]string{"-budget", "-5"}, nil, 1}, // negative: the server's default, as omitted
		{[]string{"-depth", "0"}, nil, 0},
		{[]string{"-depth", "2"}, nil, 2},
	} {
		fake := &fakePlanner{plan: samplePlan()}
		code, _, errOut := runCLI(append(append([]string{"-addr", serve(t, fake)}, c.args...), "q")...)
		if code != 0 {
			t.Errorf("args %q: exit %d, stderr %q; want 0", c.args, code, errOut)
			continue
		}
		want := &plannerv1.PlanRequest{Question: "q", ExpandDepth: c.depth, BudgetTokens: c.budget}
		if !proto.Equal(fake.got, want) {
			t.Errorf("args %q: request = %v, want %v", c.args, fake.got, want)
		}
	}
}
