package planhash

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/planner-svc/planner-svc/clients/go/gen/planner/v1"
)

// vectorDir holds the language-neutral plan hash vectors shared with the Python service.
const vectorDir = "../../../tests/vectors"

type vector struct {
	file string
	line int
	name string
	plan *plannerv1.EvidencePlan
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	for _, path := range files {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		scanner := bufio.NewScanner(fh)
		scanner.Buffer(make([]byte, 0, 1<<16), 1<<24)
		for n := 1; scanner.Scan(); n++ {
			raw := scanner.Bytes()
			if strings.TrimSpace(string(raw)) == "" {
				continue
			}
			var head struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			plan := &plannerv1.EvidencePlan{}
			// "name" is the only key outside the EvidencePlan JSON mapping.
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, plan); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			out = append(out, vector{file: filepath.Base(path), line: n, name: head.Name, plan: plan})
		}
		if err := scanner.Err(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	return out
}

func TestVectorsReproduceTheirHashes(t *testing.T) {
	vectors := loadVectors(t)
	perFile := map[string]int{}
	for _, v := range vectors {
		perFile[v.file]++
		t.Run(v.file+"/"+v.name, func(t *testing.T) {
			want := v.plan.GetPlanHash()
			if got := Hash(v.plan); got != want {
				t.Fatalf("%s:%d %q: Hash = %s, vector says %s", v.file, v.line, v.name, got, want)
			}
			if err := Verify(v.plan); err != nil {
				t.Fatalf("%s:%d %q: Verify: %v", v.file, v.line, v.name, err)
			}
		})
	}
	// The published set has seven plans; the edge-case set fifteen.
	if perFile["plan_hash_v1.jsonl"] != 7 {
		t.Errorf("plan_hash_v1.jsonl: %d vectors read, want 7", perFile["plan_hash_v1.jsonl"])
	}
	if perFile["plan_hash_v1_extra.jsonl"] != 15 {
		t.Errorf("plan_hash_v1_extra.jsonl: %d vectors read, want 15", perFile["plan_hash_v1_extra.jsonl"])
	}
}

func TestVectorEdgeCasesParseExactly(t *testing.T) {
	byName := map[string]*plannerv1.EvidencePlan{}
	for _, v := range loadVectors(t) {
		byName[v.name] = v.plan
	}
	weight := func(name string) float64 {
		plan, ok := byName[name]
		if !ok || len(plan.GetSpans()) == 0 {
			t.Fatalf("vector %q missing", name)
		}
		return plan.GetSpans()[0].GetWeight()
	}
	if bits := math.Float64bits(weight("negative zero weight (bits 0x8000000000000000)")); bits != 1<<63 {
		t.Errorf("negative zero parsed as bits %#x", bits)
	}
	if bits := math.Float64bits(weight("subnormal weight 5e-324")); bits != 1 {
		t.Errorf("5e-324 parsed as bits %#x", bits)
	}
	if w := weight("largest finite weight"); w != math.MaxFloat64 {
		t.Errorf("largest finite weight parsed as %v", w)
	}
	if plan := byName["max u64 tokens, budget and used"]; plan.GetBudget() != math.MaxUint64 || plan.GetSpans()[0].GetTokens() != math.MaxUint64 {
		t.Errorf("max u64 vector parsed as budget %d tokens %d", plan.GetBudget(), plan.GetSpans()[0].GetTokens())
	}
	// Omitted proto3 JSON fields are zero; 64-bit integers arrive as strings.
	sent := byName["as the service sends it: zero fields omitted, 64-bit integers as strings"]
	if sent == nil || sent.GetBudget() != 1500 || sent.GetUsed() != 9 || len(sent.GetSpans()) != 2 {
		t.Fatalf("as-sent vector parsed as %v", sent)
	}
	first := sent.GetSpans()[0]
	if first.GetSpan().GetStart() != 0 || first.GetWeight() != 0 || first.GetTokens() != 0 || first.GetSpan().GetSourceVersionTx() != 1_800_000_000_000_000 {
		t.Errorf("as-sent first span parsed as %v", first)
	}
	if empty := byName["empty plan as the service sends it"]; empty.GetPlanHash() != EmptyPlanHash || empty.GetBudget() != 0 || len(empty.GetSpans()) != 0 {
		t.Errorf("as-sent empty plan parsed as %v", empty)
	}
}

func TestLocationsAreReadButNotHashed(t *testing.T) {
	var plan *plannerv1.EvidencePlan
	for _, v := range loadVectors(t) {
		if strings.HasPrefix(v.name, "spans with locations") {
			plan = v.plan
		}
	}
	if plan == nil || len(plan.GetSpans()) != 3 {
		t.Fatalf("the vector with locations is missing or parsed as %v", plan)
	}
	pdf := plan.GetSpans()[0].GetLocation()
	if pdf.GetPage() != 2 || len(pdf.GetHeadingPath()) != 1 || pdf.GetHeadingPath()[0] != "Swarm control" || pdf.CellIndex != nil {
		t.Errorf("the PDF span's location parsed as %v", pdf)
	}
	if cell := plan.GetSpans()[1].GetLocation(); cell.GetCellIndex() != 3 || cell.Page != nil {
		t.Errorf("the notebook span's location parsed as %v", cell)
	}
	withLocations := Hash(plan)
	bare := proto.Clone(plan).(*plannerv1.EvidencePlan)
	for _, span := range bare.GetSpans() {
		span.Location = nil
	}
	if withLocations != plan.GetPlanHash() || Hash(bare) != withLocations {
		t.Errorf("locations moved the hash: with %s, without %s, vector %s", withLocations, Hash(bare), plan.GetPlanHash())
	}
}

func TestSourceIDOrderVectorIsCodePointOrder(t *testing.T) {
	var plan *plannerv1.EvidencePlan
	for _, v := range loadVectors(t) {
		if strings.HasPrefix(v.name, "source ids by code point") {
			plan = v.plan
		}
	}
	if plan == nil {
		t.Fatal("code point order vector missing")
	}
	var ids []string
	for _, s := range plan.GetSpans() {
		ids = append(ids, s.GetSpan().GetSourceId())
	}
	if want := []string{"\uFF21", "\uFFFD", "\U00010000", "\U0001F600"}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %q, want %q", ids, want)
	}
	if !slices.IsSorted(ids) { // Go compares strings by UTF-8 bytes: code point order
		t.Fatalf("%q is not in byte order", ids)
	}
	if err := Verify(plan); err != nil {
		t.Fatal(err)
	}
	// Ordered by UTF-16 code units instead, the surrogate pairs come first.
	byUTF16 := slices.Clone(ids)
	slices.SortFunc(byUTF16, func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	})
	if slices.Equal(byUTF16, ids) {
		t.Fatalf("UTF-16 order %q does not differ from code point order", byUTF16)
	}
}

func TestEncodeLayout(t *testing.T) {
	plan := &plannerv1.EvidencePlan{
		PlanModel: "v1",
		Budget:    9,
		Used:      3,
		Spans: []*plannerv1.PlannedSpan{{
			Span:   &plannerv1.SpanRef{SourceId: "d", SourceVersionTx: -2, Start: 1, End: 5},
			Kind:   "heading",
			Class:  plannerv1.SpanClass_SPAN_CLASS_CACHE,
			Weight: 0.5,
			Tokens: 3,
			Text:   "abcd",
		}},
	}
	want := "00000002" + "7631" + // plan_model
		"0000000000000009" + "0000000000000003" + "0000000000000001" + // budget, used, count
		"00000001" + "64" + "fffffffffffffffe" + // source_id, source_version_tx -2
		"0000000000000001" + "0000000000000005" + // start, end
		"00000007" + "68656164696e67" + "02" + // kind "heading", class cache
		"3fe0000000000000" + "0000000000000003" // weight 0.5, tokens
	if got := hex.EncodeToString(Encode(plan)); got != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", got, want)
	}
}

func TestEmptyPlan(t *testing.T) {
	empty := &plannerv1.EvidencePlan{PlanModel: "v1"}
	if got := Hash(empty); got != EmptyPlanHash {
		t.Fatalf("Hash(empty) = %s, want %s", got, EmptyPlanHash)
	}
	empty.PlanHash = EmptyPlanHash
	if err := Verify(empty); err != nil {
		t.Fatal(err)
	}
	if len(EmptyPlanHash) != len(Prefix)+64 {
		t.Fatalf("EmptyPlanHash has %d characters", len(EmptyPlanHash))
	}
}

func onePlan() *plannerv1.EvidencePlan {
	plan := &plannerv1.EvidencePlan{
		PlanModel: "v1",
		Budget:    450,
		Used:      30,
		Spans: []*plannerv1.PlannedSpan{
			{
				Span:   &plannerv1.SpanRef{SourceId: "wiki/A", SourceVersionTx: 1_751_500_000_000_000, Start: 0, End: 40},
				Kind:   "paragraph",
				Class:  plannerv1.SpanClass_SPAN_CLASS_TRUTH,
				Weight: 0.842,
				Tokens: 12,
			},
			{
				Span:   &plannerv1.SpanRef{SourceId: "wiki/B", SourceVersionTx: 1_751_500_000_000_000, Start: 10, End: 90},
				Kind:   "body",
				Class:  plannerv1.SpanClass_SPAN_CLASS_TRUTH,
				Weight: 0.3,
				Tokens: 18,
			},
		},
	}
	plan.PlanHash = Hash(plan)
	return plan
}

func TestOneULPWeightChangeChangesTheHash(t *testing.T) {
	plan := onePlan()
	for _, dir := range []float64{math.Inf(1), math.Inf(-1)} {
		changed := proto.Clone(plan).(*plannerv1.EvidencePlan)
		w := changed.Spans[1].Weight
		changed.Spans[1].Weight = math.Nextafter(w, dir)
		// For a positive weight the bit patterns of neighbours differ by one as integers.
		if d := int64(math.Float64bits(changed.Spans[1].Weight)) - int64(math.Float64bits(w)); d != 1 && d != -1 {
			t.Fatalf("Nextafter moved the bit pattern by %d, want one ULP", d)
		}
		if Hash(changed) == plan.PlanHash {
			t.Fatalf("one-ULP weight change toward %v kept hash %s", dir, plan.PlanHash)
		}
		err := Verify(changed)
		var mismatch *MismatchError
		if !errors.As(err, &mismatch) {
			t.Fatalf("Verify after one-ULP change: %v, want *MismatchError", err)
		}
		if mismatch.Received != plan.PlanHash || mismatch.Computed != Hash(changed) {
			t.Fatalf("mismatch = %+v", mismatch)
		}
		if msg := err.Error(); !strings.Contains(msg, plan.PlanHash) || !strings.Contains(msg, Hash(changed)) {
			t.Fatalf("error %q does not name both hashes", msg)
		}
	}
	// 0.0 and -0.0 compare equal but have different bits, so different hashes.
	zero, negZero := proto.Clone(plan).(*plannerv1.EvidencePlan), proto.Clone(plan).(*plannerv1.EvidencePlan)
	zero.Spans[0].Weight = 0
	negZero.Spans[0].Weight = math.Copysign(0, -1)
	if Hash(zero) == Hash(negZero) {
		t.Fatal("0.0 and -0.0 weights hash alike")
	}
}

func TestTextStatsAndExplanationsAreNotHashed(t *testing.T) {
	plan := onePlan()
	plan.Spans[0].Text = "Goats were domesticated in Iran."
	plan.Stats = &plannerv1.PlanStats{PoolSpans: 9, SelectedSpans: 2, TokenEstimate: true}
	plan.Explanations = []*plannerv1.CandidateExplanation{{Fate: plannerv1.CandidateFate_CANDIDATE_FATE_PACKED}}
	if err := Verify(plan); err != nil {
		t.Fatal(err)
	}
}

func TestEveryHashedFieldChangesTheHash(t *testing.T) {
	base := onePlan()
	edits := map[string]func(p *plannerv1.EvidencePlan){
		"plan_model":        func(p *plannerv1.EvidencePlan) { p.PlanModel = "v2" },
		"budget":            func(p *plannerv1.EvidencePlan) { p.Budget++ },
		"used":              func(p *plannerv1.EvidencePlan) { p.Used-- },
		"source_id":         func(p *plannerv1.EvidencePlan) { p.Spans[0].Span.SourceId = "wiki/a" },
		"source_version_tx": func(p *plannerv1.EvidencePlan) { p.Spans[0].Span.SourceVersionTx-- },
		"start":             func(p *plannerv1.EvidencePlan) { p.Spans[0].Span.Start++ },
		"end":               func(p *plannerv1.EvidencePlan) { p.Spans[0].Span.End++ },
		"kind":              func(p *plannerv1.EvidencePlan) { p.Spans[0].Kind = "heading" },
		"class":             func(p *plannerv1.EvidencePlan) { p.Spans[0].Class = plannerv1.SpanClass_SPAN_CLASS_CACHE },
		"tokens":            func(p *plannerv1.EvidencePlan) { p.Spans[0].Tokens++ },
		"span dropped":      func(p *plannerv1.EvidencePlan) { p.Spans = p.Spans[:1] },
	}
	for name, edit := range edits {
		changed := proto.Clone(base).(*plannerv1.EvidencePlan)
		edit(changed)
		if Hash(changed) == base.PlanHash {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}

func TestVerifyRejectsMalformedPlans(t *testing.T) {
	cases := map[string]struct {
		edit func(p *plannerv1.EvidencePlan)
		want string
	}{
		"unspecified class": {
			func(p *plannerv1.EvidencePlan) { p.Spans[1].Class = plannerv1.SpanClass_SPAN_CLASS_UNSPECIFIED },
			"spans[1].class: SPAN_CLASS_UNSPECIFIED",
		},
		"missing span": {
			func(p *plannerv1.EvidencePlan) { p.Spans[0].Span = nil },
			"spans[0].span: missing",
		},
		"out of order": {
			func(p *plannerv1.EvidencePlan) { p.Spans[0], p.Spans[1] = p.Spans[1], p.Spans[0] },
			"spans[1].span: (\"wiki/A\"",
		},
		"duplicate": {
			func(p *plannerv1.EvidencePlan) { p.Spans[1] = proto.Clone(p.Spans[0]).(*plannerv1.PlannedSpan) },
			"is not after spans[0]",
		},
		"NaN weight": {
			func(p *plannerv1.EvidencePlan) { p.Spans[0].Weight = math.NaN() },
			"spans[0].weight: NaN, must be finite and >= 0",
		},
		"infinite weight": {
			func(p *plannerv1.EvidencePlan) { p.Spans[1].Weight = math.Inf(1) },
			"spans[1].weight: +Inf",
		},
		"negative weight": {
			func(p *plannerv1.EvidencePlan) { p.Spans[0].Weight = -0.5 },
			"spans[0].weight: -0.5",
		},
	}
	for name, tc := range cases {
		plan := onePlan()
		tc.edit(plan)
		plan.PlanHash = Hash(plan) // the hash matches: only the shape is wrong
		err := Verify(plan)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Verify = %v, want an error containing %q", name, err, tc.want)
		}
	}
	if err := Verify(nil); err == nil {
		t.Error("Verify(nil) = nil")
	}
}

func TestCanonicalOrderIsByCodePoint(t *testing.T) {
	// "Z" < "a" < U+FFFD < U+1F600 by code point; UTF-16 order would put U+1F600 first
	// (surrogate 0xD83D < 0xFFFD).
	ids := []string{"Z", "a", "\uFFFD", "\U0001F600"}
	plan := &plannerv1.EvidencePlan{PlanModel: "v1", Budget: 10, Used: 4}
	for _, id := range ids {
		plan.Spans = append(plan.Spans, &plannerv1.PlannedSpan{
			Span:   &plannerv1.SpanRef{SourceId: id, Start: 0, End: 1},
			Kind:   "body",
			Class:  plannerv1.SpanClass_SPAN_CLASS_TRUTH,
			Weight: 1,
			Tokens: 1,
		})
	}
	plan.PlanHash = Hash(plan)
	if err := Verify(plan); err != nil {
		t.Fatal(err)
	}
}
