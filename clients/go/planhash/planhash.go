// Package planhash recomputes the plan hash v1 of an EvidencePlan.
//
// The encoding (docs/plan-hash.md in the repository) concatenates, every integer
// big-endian: plan_model (u32 UTF-8 byte length, then the bytes), budget (u64), used (u64), the
// span count (u64), then for each span in the order the plan lists them: source_id (u32 length +
// UTF-8), source_version_tx (i64, two's complement), start (u64), end (u64), kind (u32 length +
// UTF-8), class (u8: 1 truth, 2 cache), weight (the IEEE-754 bits as u64), tokens (u64). The
// hash is BLAKE3 (32 bytes) of those bytes, rendered "b3:" + 64 lowercase hex digits. Span text,
// stats and explanations are not hashed.
package planhash

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"lukechampine.com/blake3"

	plannerv1 "github.com/planner-svc/planner-svc/clients/go/gen/planner/v1"
)

// Prefix starts every rendered plan hash.
const Prefix = "b3:"

// EmptyPlanHash is the hash of the empty plan: plan model "v1", budget 0, used 0, no spans.
const EmptyPlanHash = "b3:272a6a0e4d57118a898c1ade3401cddff16bf0e0e2e7cbe59483978e37c82068"

// Encode returns the canonical plan hash v1 bytes of plan.
//
// Spans are encoded in the order plan.Spans lists them (the service sends them in canonical
// order; Verify checks it). A missing span reference encodes as the zero SpanRef and the class
// as its enum number in one byte, so a plan carrying either never matches the service's hash;
// Verify reports both by field. A nil plan encodes like an empty message (plan model "").
func Encode(plan *plannerv1.EvidencePlan) []byte {
	spans := plan.GetSpans()
	out := make([]byte, 0, 28+len(plan.GetPlanModel())+len(spans)*64)
	out = putString(out, plan.GetPlanModel())
	out = binary.BigEndian.AppendUint64(out, plan.GetBudget())
	out = binary.BigEndian.AppendUint64(out, plan.GetUsed())
	out = binary.BigEndian.AppendUint64(out, uint64(len(spans)))
	for _, s := range spans {
		ref := s.GetSpan()
		out = putString(out, ref.GetSourceId())
		out = binary.BigEndian.AppendUint64(out, uint64(ref.GetSourceVersionTx()))
		out = binary.BigEndian.AppendUint64(out, ref.GetStart())
		out = binary.BigEndian.AppendUint64(out, ref.GetEnd())
		out = putString(out, s.GetKind())
		out = append(out, byte(s.GetClass()))
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(s.GetWeight()))
		out = binary.BigEndian.AppendUint64(out, s.GetTokens())
	}
	return out
}

// Hash returns "b3:" + the lowercase hex BLAKE3-256 of Encode(plan).
func Hash(plan *plannerv1.EvidencePlan) string {
	sum := blake3.Sum256(Encode(plan))
	return Prefix + hex.EncodeToString(sum[:])
}

// MismatchError reports a plan whose plan_hash differs from the hash recomputed from its spans.
type MismatchError struct {
	// Received is the plan's plan_hash field as sent.
	Received string
	// Computed is Hash(plan).
	Computed string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("plan hash mismatch: plan carries %q, recomputed %q", e.Received, e.Computed)
}

// Verify checks that plan is well formed for hashing and that its plan_hash equals Hash(plan).
//
// Errors: a *MismatchError naming both hashes when they differ; otherwise an error naming the
// field and value when a span has no span reference, a class other than SPAN_CLASS_TRUTH or
// SPAN_CLASS_CACHE, a weight that is NaN, infinite or below zero (-0.0 is allowed and hashes as
// its own bits), a string longer than 2^32-1 bytes, or spans out of canonical order (ascending
// source_id by UTF-8 bytes, then source_version_tx, start, end; no duplicates).
func Verify(plan *plannerv1.EvidencePlan) error {
	if plan == nil {
		return fmt.Errorf("plan: nil")
	}
	if err := checkString("plan_model", plan.GetPlanModel()); err != nil {
		return err
	}
	var prev *plannerv1.SpanRef
	for i, s := range plan.GetSpans() {
		ref := s.GetSpan()
		if ref == nil {
			return fmt.Errorf("spans[%d].span: missing", i)
		}
		if err := checkString(fmt.Sprintf("spans[%d].span.source_id", i), ref.GetSourceId()); err != nil {
			return err
		}
		if err := checkString(fmt.Sprintf("spans[%d].kind", i), s.GetKind()); err != nil {
			return err
		}
		switch s.GetClass() {
		case plannerv1.SpanClass_SPAN_CLASS_TRUTH, plannerv1.SpanClass_SPAN_CLASS_CACHE:
		default:
			return fmt.Errorf("spans[%d].class: %v, must be SPAN_CLASS_TRUTH or SPAN_CLASS_CACHE", i, s.GetClass())
		}
		if w := s.GetWeight(); math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return fmt.Errorf("spans[%d].weight: %v, must be finite and >= 0", i, w)
		}
		if prev != nil && compareRefs(prev, ref) >= 0 {
			return fmt.Errorf("spans[%d].span: (%q, %d, %d, %d) is not after spans[%d]; spans must be in ascending canonical order",
				i, ref.GetSourceId(), ref.GetSourceVersionTx(), ref.GetStart(), ref.GetEnd(), i-1)
		}
		prev = ref
	}
	if computed := Hash(plan); computed != plan.GetPlanHash() {
		return &MismatchError{Received: plan.GetPlanHash(), Computed: computed}
	}
	return nil
}

// compareRefs orders span references canonically: source_id by bytes (equal to code point
// order for UTF-8; Go compares strings bytewise), then source_version_tx, start, end.
func compareRefs(a, b *plannerv1.SpanRef) int {
	if c := cmp.Compare(a.GetSourceId(), b.GetSourceId()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.GetSourceVersionTx(), b.GetSourceVersionTx()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.GetStart(), b.GetStart()); c != 0 {
		return c
	}
	return cmp.Compare(a.GetEnd(), b.GetEnd())
}

func checkString(field, value string) error {
	if uint64(len(value)) > math.MaxUint32 {
		return fmt.Errorf("%s: %d UTF-8 bytes, at most %d", field, len(value), uint64(math.MaxUint32))
	}
	return nil
}

func putString(out []byte, value string) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(value)))
	return append(out, value...)
}
