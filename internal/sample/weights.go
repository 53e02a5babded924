package sample

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
)

// fill says what pseudo-random values a tensor holds. Float tensors get finite values of a
// plausible magnitude (sign, a narrow exponent range, random mantissa), so the bytes look like
// weights to anything that reads them; packed integer tensors get uniform random bits.
type fill uint8

const (
	fillRaw      fill = iota // uniform bits (AWQ qweight/qzeros: every nibble is a valid 4-bit value)
	fillBF16                 // ±[2^-7, 2^-3)
	fillBF16Norm             // [0.5, 2), like RMSNorm gains
	fillF16                  // ±[2^-7, 2^-3)
	fillF16Norm              // [0.5, 2)
	fillF16Scale             // +[2^-7, 2^-3), AWQ scales are positive
)

// masks: v = r&and | or, applied to four little-endian 16-bit values at a time.
var fillMasks = [...]struct{ and, or uint64 }{
	fillRaw:      {^uint64(0), 0},
	fillBF16:     {0x81FF81FF81FF81FF, 0x3C003C003C003C00},
	fillBF16Norm: {0x00FF00FF00FF00FF, 0x3F003F003F003F00},
	fillF16:      {0x8FFF8FFF8FFF8FFF, 0x2000200020002000},
	fillF16Norm:  {0x07FF07FF07FF07FF, 0x3800380038003800},
	fillF16Scale: {0x0FFF0FFF0FFF0FFF, 0x2000200020002000},
}

var dtypeSize = map[string]int64{"BF16": 2, "F16": 2, "I32": 4, "F32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1, "F8_E5M2": 1}

// tensor is one weight tensor to write.
type tensor struct {
	name  string
	dtype string
	shape []int64
	fill  fill
}

func (t tensor) bytes() int64 {
	n := dtypeSize[t.dtype]
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// floatKinds returns the dtype and the fills of dense and norm tensors for a variant.
func floatKinds(quant string) (dtype string, dense, norm fill) {
	if quant == "awq" {
		return "F16", fillF16, fillF16Norm
	}
	return "BF16", fillBF16, fillBF16Norm
}

// modelTensors lists the checkpoint's tensors in state-dict order (the order shards are filled).
func modelTensors(o Options, group int) []tensor {
	dt, dense, norm := floatKinds(o.Quant)
	h, i, v := int64(o.Hidden), int64(o.Intermediate), int64(o.VocabSize)
	kv := int64(o.KVHeads * (o.Hidden / o.Heads))
	ts := []tensor{{"model.embed_tokens.weight", dt, []int64{v, h}, dense}}
	linear := func(name string, out, in int64) {
		if o.Quant == "awq" {
			g := int64(group)
			ts = append(ts,
				tensor{name + ".qweight", "I32", []int64{in, out / 8}, fillRaw},
				tensor{name + ".qzeros", "I32", []int64{in / g, out / 8}, fillRaw},
				tensor{name + ".scales", "F16", []int64{in / g, out}, fillF16Scale})
			return
		}
		ts = append(ts, tensor{name + ".weight", dt, []int64{out, in}, dense})
	}
	for l := 0; l < o.Layers; l++ {
		p := "model.layers." + strconv.Itoa(l) + "."
		linear(p+"self_attn.q_proj", h, h)
		linear(p+"self_attn.k_proj", kv, h)
		linear(p+"self_attn.v_proj", kv, h)
		linear(p+"self_attn.o_proj", h, h)
		linear(p+"mlp.gate_proj", i, h)
		linear(p+"mlp.up_proj", i, h)
		linear(p+"mlp.down_proj", h, i)
		ts = append(ts,
			tensor{p + "input_layernorm.weight", dt, []int64{h}, norm},
			tensor{p + "post_attention_layernorm.weight", dt, []int64{h}, norm})
	}
	return append(ts,
		tensor{"model.norm.weight", dt, []int64{h}, norm},
		tensor{"lm_head.weight", dt, []int64{v, h}, dense})
}

// loraTensors lists the adapter's tensors (PEFT names, rank LoRARank on q_proj and v_proj).
func loraTensors(o Options) []tensor {
	dt, dense, _ := floatKinds(o.Quant)
	h, r := int64(o.Hidden), int64(LoRARank)
	kv := int64(o.KVHeads * (o.Hidden / o.Heads))
	var ts []tensor
	for l := 0; l < o.Layers; l++ {
		p := "base_model.model.model.layers." + strconv.Itoa(l) + ".self_attn."
		ts = append(ts,
			tensor{p + "q_proj.lora_A.weight", dt, []int64{r, h}, dense},
			tensor{p + "q_proj.lora_B.weight", dt, []int64{h, r}, dense},
			tensor{p + "v_proj.lora_A.weight", dt, []int64{r, h}, dense},
			tensor{p + "v_proj.lora_B.weight", dt, []int64{kv, r}, dense})
	}
	return ts
}

func totalBytes(ts []tensor) int64 {
	var n int64
	for _, t := range ts {
		n += t.bytes()
	}
	return n
}

// splitShards cuts ts, in order, into n non-empty runs of roughly equal bytes: a tensor goes to the
// shard its middle byte falls in, but every shard keeps at least one tensor.
func splitShards(ts []tensor, n int) [][]tensor {
	total := totalBytes(ts)
	out := make([][]tensor, n)
	var pos int64
	s := 0
	for i, t := range ts {
		mid := pos + t.bytes()/2
		want := 0
		if total > 0 {
			want = int(mid * int64(n) / total)
		}
		left := len(ts) - i // tensors still to place, including this one
		for s < n-1 && len(out[s]) > 0 && (want > s || left <= n-1-s) {
			s++
		}
		out[s] = append(out[s], t)
		pos += t.bytes()
	}
	return out
}

// dtypeRank orders dtypes the way the reference writer lays out data: wider alignment first.
var dtypeRank = map[string]int{"I32": 0, "BF16": 1, "F16": 2}

// layout orders a shard's tensors like safetensors' reference writer (dtype alignment descending,
// then name) and builds its header: compact JSON, "__metadata__" first, padded with spaces to a
// multiple of 8 bytes.
func layout(ts []tensor) ([]tensor, []byte) {
	ts = append([]tensor(nil), ts...)
	sort.SliceStable(ts, func(i, j int) bool {
		if a, b := dtypeRank[ts[i].dtype], dtypeRank[ts[j].dtype]; a != b {
			return a < b
		}
		return ts[i].name < ts[j].name
	})
	var b bytes.Buffer
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	var off int64
	for _, t := range ts {
		name, _ := json.Marshal(t.name)
		fmt.Fprintf(&b, `,%s:{"dtype":"%s","shape":[`, name, t.dtype)
		for k, d := range t.shape {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		end := off + t.bytes()
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return ts, b.Bytes()
}

// chunkSize is the streaming buffer: memory use does not grow with the checkpoint.
const chunkSize = 1 << 20

// writeSafetensors streams a safetensors file of ts to w, checking ctx between chunks.
func writeSafetensors(ctx context.Context, w io.Writer, ts []tensor, seed uint64) error {
	ordered, hdr := layout(ts)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	buf := make([]byte, chunkSize)
	for _, t := range ordered {
		if err := writeTensorData(ctx, w, t, seed, buf); err != nil {
			return fmt.Errorf("tensor %s: %w", t.name, err)
		}
	}
	return nil
}

// tensorRNG seeds a generator from the repository seed and the tensor name, so a tensor's bytes do
// not depend on which shard it lands in.
func tensorRNG(seed uint64, name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(seed, h.Sum64())
}

func writeTensorData(ctx context.Context, w io.Writer, t tensor, seed uint64, buf []byte) error {
	r := tensorRNG(seed, t.name)
	m := fillMasks[t.fill]
	for left := t.bytes(); left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := buf
		if int64(len(c)) > left {
			c = c[:left]
		}
		i := 0
		for ; i+8 <= len(c); i += 8 {
			binary.LittleEndian.PutUint64(c[i:], r.Uint64()&m.and|m.or)
		}
		if i < len(c) {
			var tail [8]byte
			binary.LittleEndian.PutUint64(tail[:], r.Uint64()&m.and|m.or)
			copy(c[i:], tail[:])
		}
		if _, err := w.Write(c); err != nil {
			return err
		}
		left -= int64(len(c))
	}
	return nil
}
