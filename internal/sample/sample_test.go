package sample

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

func generate(t testing.TB, opts Options) *Layout {
	t.Helper()
	l, err := Generate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return l
}

func readJSON(t testing.TB, l *Layout, rel string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(l.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

func jsonInt(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return i
}

// stTensor is one header entry, read by the test's own parser (not the package's writer).
type stTensor struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

var stDtypeSize = map[string]int64{"BOOL": 1, "U8": 1, "I8": 1, "F16": 2, "BF16": 2, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}

// readSafetensors checks a file the way the reference parser does and returns its tensors.
func readSafetensors(t testing.TB, path string) map[string]stTensor {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8 {
		t.Fatalf("%s: %d bytes", path, len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > 100_000_000 || n > uint64(len(data)-8) {
		t.Fatalf("%s: header length %d, file %d", path, n, len(data))
	}
	if n%8 != 0 {
		t.Errorf("%s: header length %d is not padded to a multiple of 8", path, n)
	}
	hdr := data[8 : 8+n]
	if trimmed := bytes.TrimRight(hdr, " "); !bytes.HasSuffix(trimmed, []byte("}")) || len(hdr)-len(trimmed) >= 8 {
		t.Errorf("%s: header padding is not 0-7 trailing spaces", path)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		t.Fatalf("%s: header JSON: %v", path, err)
	}
	var md map[string]string
	if err := json.Unmarshal(raw["__metadata__"], &md); err != nil || md["format"] != "pt" {
		t.Errorf("%s: __metadata__ = %s, want {\"format\":\"pt\"}", path, raw["__metadata__"])
	}
	delete(raw, "__metadata__")
	out := map[string]stTensor{}
	type span struct {
		name       string
		begin, end int64
	}
	var spans []span
	for name, r := range raw {
		var ti stTensor
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ti); err != nil {
			t.Fatalf("%s: tensor %s: %v", path, name, err)
		}
		size, ok := stDtypeSize[ti.DType]
		if !ok || len(ti.Offsets) != 2 {
			t.Fatalf("%s: tensor %s: dtype %q offsets %v", path, name, ti.DType, ti.Offsets)
		}
		elems := int64(1)
		for _, d := range ti.Shape {
			elems *= d
		}
		if got := ti.Offsets[1] - ti.Offsets[0]; got != elems*size {
			t.Errorf("%s: tensor %s spans %d bytes, %s%v needs %d", path, name, got, ti.DType, ti.Shape, elems*size)
		}
		out[name] = ti
		spans = append(spans, span{name, ti.Offsets[0], ti.Offsets[1]})
	}
	// Duplicate names would have collapsed in the map: count the keys in the raw text too.
	if c := bytes.Count(hdr, []byte(`"data_offsets"`)); c != len(out) {
		t.Errorf("%s: %d data_offsets entries for %d names (duplicates?)", path, c, len(out))
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	var pos int64
	for _, s := range spans {
		if s.begin != pos {
			t.Errorf("%s: tensor %s begins at %d, previous ends at %d", path, s.name, s.begin, pos)
		}
		pos = s.end
	}
	if want := int64(len(data)) - 8 - int64(n); pos != want {
		t.Errorf("%s: tensors end at %d, data buffer is %d bytes", path, pos, want)
	}
	// Data order is the reference writer's: wider dtypes first, then by name.
	if !sort.SliceIsSorted(spans, func(i, j int) bool {
		a, b := out[spans[i].name], out[spans[j].name]
		if stDtypeSize[a.DType] != stDtypeSize[b.DType] {
			return stDtypeSize[a.DType] > stDtypeSize[b.DType]
		}
		return spans[i].name < spans[j].name
	}) {
		t.Errorf("%s: data not laid out in (dtype size desc, name) order", path)
	}
	return out
}

// allTensors reads every model shard, checking the index against them.
func allTensors(t testing.TB, l *Layout) (map[string]stTensor, int64) {
	t.Helper()
	tensors := map[string]stTensor{}
	where := map[string]string{}
	var total int64
	for _, s := range l.Shards {
		for name, ti := range readSafetensors(t, filepath.Join(l.ModelDir, s)) {
			if _, dup := tensors[name]; dup {
				t.Errorf("tensor %s in two shards", name)
			}
			tensors[name] = ti
			where[name] = s
			total += ti.Offsets[1] - ti.Offsets[0]
		}
	}
	if total != l.WeightBytes {
		t.Errorf("shards hold %d tensor bytes, Layout.WeightBytes = %d", total, l.WeightBytes)
	}
	if len(l.Shards) == 1 {
		if _, err := os.Stat(l.Path("model/model.safetensors.index.json")); !os.IsNotExist(err) {
			t.Errorf("single-shard checkpoint has an index (stat: %v)", err)
		}
		return tensors, total
	}
	idx := readJSON(t, l, "model/model.safetensors.index.json")
	if got := jsonInt(t, idx["metadata"].(map[string]any)["total_size"]); got != total {
		t.Errorf("index total_size %d, shards hold %d", got, total)
	}
	wm := idx["weight_map"].(map[string]any)
	if len(wm) != len(tensors) {
		t.Errorf("index names %d tensors, shards hold %d", len(wm), len(tensors))
	}
	for name, f := range wm {
		if _, err := os.Stat(filepath.Join(l.ModelDir, f.(string))); err != nil {
			t.Errorf("index maps %s to missing shard: %v", name, err)
		}
		if where[name] != f {
			t.Errorf("index maps %s to %s, it is in %q", name, f, where[name])
		}
	}
	return tensors, total
}

// expectedShapes derives every tensor from config.json alone.
func expectedShapes(t testing.TB, l *Layout) map[string]stTensor {
	t.Helper()
	c := readJSON(t, l, "model/config.json")
	h, i, v := jsonInt(t, c["hidden_size"]), jsonInt(t, c["intermediate_size"]), jsonInt(t, c["vocab_size"])
	heads, kvh, hd := jsonInt(t, c["num_attention_heads"]), jsonInt(t, c["num_key_value_heads"]), jsonInt(t, c["head_dim"])
	if hd*heads != h {
		t.Errorf("head_dim %d × heads %d != hidden %d", hd, heads, h)
	}
	kv := kvh * hd
	dt := map[string]string{"bfloat16": "BF16", "float16": "F16"}[c["torch_dtype"].(string)]
	var g int64
	if q, ok := c["quantization_config"].(map[string]any); ok {
		g = jsonInt(t, q["group_size"])
	}
	want := map[string]stTensor{
		"model.embed_tokens.weight": {DType: dt, Shape: []int64{v, h}},
		"model.norm.weight":         {DType: dt, Shape: []int64{h}},
		"lm_head.weight":            {DType: dt, Shape: []int64{v, h}},
	}
	lin := func(name string, out, in int64) {
		if g > 0 {
			want[name+".qweight"] = stTensor{DType: "I32", Shape: []int64{in, out / 8}}
			want[name+".qzeros"] = stTensor{DType: "I32", Shape: []int64{in / g, out / 8}}
			want[name+".scales"] = stTensor{DType: "F16", Shape: []int64{in / g, out}}
			return
		}
		want[name+".weight"] = stTensor{DType: dt, Shape: []int64{out, in}}
	}
	for n := int64(0); n < jsonInt(t, c["num_hidden_layers"]); n++ {
		p := fmt.Sprintf("model.layers.%d.", n)
		lin(p+"self_attn.q_proj", h, h)
		lin(p+"self_attn.k_proj", kv, h)
		lin(p+"self_attn.v_proj", kv, h)
		lin(p+"self_attn.o_proj", h, h)
		lin(p+"mlp.gate_proj", i, h)
		lin(p+"mlp.up_proj", i, h)
		lin(p+"mlp.down_proj", h, i)
		want[p+"input_layernorm.weight"] = stTensor{DType: dt, Shape: []int64{h}}
		want[p+"post_attention_layernorm.weight"] = stTensor{DType: dt, Shape: []int64{h}}
	}
	return want
}

func checkShapes(t testing.TB, l *Layout) {
	t.Helper()
	got, _ := allTensors(t, l)
	want := expectedShapes(t, l)
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("missing tensor %s", name)
			continue
		}
		if g.DType != w.DType || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) {
			t.Errorf("%s: %s%v, config implies %s%v", name, g.DType, g.Shape, w.DType, w.Shape)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected tensor %s", name)
		}
	}
}

func TestDefaultRepository(t *testing.T) {
	l := generate(t, Options{})
	want := []string{
		"deploy/Dockerfile", "deploy/deployment.yaml", "deploy/requirements.lock", "engine/engine.yaml",
		"model/README.md", "model/config.json", "model/generation_config.json",
		"model/loras/sql-lora/adapter_config.json", "model/loras/sql-lora/adapter_model.safetensors",
		"model/model-00001-of-00002.safetensors", "model/model-00002-of-00002.safetensors",
		"model/model.safetensors.index.json", "model/special_tokens_map.json", "model/tokenizer.json",
		"model/tokenizer_config.json",
	}
	if fmt.Sprint(l.Files) != fmt.Sprint(want) {
		t.Errorf("Files = %v\nwant %v", l.Files, want)
	}
	var onDisk []string
	filepath.WalkDir(l.Root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(l.Root, p)
			onDisk = append(onDisk, filepath.ToSlash(rel))
		}
		return err
	})
	if fmt.Sprint(onDisk) != fmt.Sprint(want) {
		t.Errorf("on disk: %v", onDisk)
	}
	for _, f := range l.Files {
		if strings.HasSuffix(f, ".json") {
			readJSON(t, l, f)
		}
	}
	if l.ModelDir != l.Path("model") || l.EngineFile != l.Path("engine/engine.yaml") || l.DeployDir != l.Path("deploy") || l.LoRAName != "sql-lora" {
		t.Errorf("layout %+v", l)
	}
	checkShapes(t, l)

	c := readJSON(t, l, "model/config.json")
	for k, v := range map[string]string{
		"_name_or_path": DefaultModelName, "model_type": "llama", "hidden_act": "silu", "torch_dtype": "bfloat16",
		"max_position_embeddings": "131072", "rope_theta": "500000.0", "tie_word_embeddings": "false",
		"vocab_size": "512", "hidden_size": "64", "num_hidden_layers": "2",
	} {
		if got := fmt.Sprint(c[k]); got != v {
			t.Errorf("config %s = %s, want %s", k, got, v)
		}
	}
	if a := c["architectures"].([]any); len(a) != 1 || a[0] != "LlamaForCausalLM" {
		t.Errorf("architectures %v", a)
	}
	rs := c["rope_scaling"].(map[string]any)
	if rs["rope_type"] != "llama3" || fmt.Sprint(rs["factor"]) != "8.0" || fmt.Sprint(rs["original_max_position_embeddings"]) != "8192" {
		t.Errorf("rope_scaling %v", rs)
	}
	if _, ok := c["quantization_config"]; ok {
		t.Error("bf16 config has quantization_config")
	}
	gc := readJSON(t, l, "model/generation_config.json")
	if fmt.Sprint(gc["eos_token_id"]) != fmt.Sprint(c["eos_token_id"]) || gc["do_sample"] != true ||
		fmt.Sprint(gc["temperature"]) != "0.6" || fmt.Sprint(gc["top_p"]) != "0.9" {
		t.Errorf("generation_config %v", gc)
	}
	readme, _ := os.ReadFile(l.Path("model/README.md"))
	if !bytes.HasPrefix(readme, []byte("---\n")) || !bytes.Contains(readme, []byte("# Llama-3.1-8B-Instruct-demo")) {
		t.Errorf("README:\n%s", readme)
	}
}

func TestDeterministic(t *testing.T) {
	for _, opts := range []Options{{}, {Quant: "awq", Seed: 7, Shards: 3}} {
		a, b := generate(t, opts), generate(t, opts)
		if fmt.Sprint(a.Files) != fmt.Sprint(b.Files) {
			t.Fatalf("file lists differ: %v vs %v", a.Files, b.Files)
		}
		for _, f := range a.Files {
			x, err1 := os.ReadFile(a.Path(f))
			y, err2 := os.ReadFile(b.Path(f))
			if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
				t.Errorf("%+v: %s differs between runs (%v, %v)", opts, f, err1, err2)
			}
		}
	}
	// The seed changes the weights and nothing else (the model card records it).
	a, b := generate(t, Options{}), generate(t, Options{Seed: 1})
	for _, f := range a.Files {
		if f == "model/README.md" {
			continue
		}
		x, _ := os.ReadFile(a.Path(f))
		y, _ := os.ReadFile(b.Path(f))
		if bytes.Equal(x, y) == strings.HasSuffix(f, ".safetensors") {
			t.Errorf("seed 0 vs 1: %s equal = %v", f, bytes.Equal(x, y))
		}
	}
}

func TestWeightsLookReal(t *testing.T) {
	l := generate(t, Options{})
	data, _ := os.ReadFile(filepath.Join(l.ModelDir, l.Shards[0]))
	n := binary.LittleEndian.Uint64(data[:8])
	buf := data[8+n:]
	zeros, nonFinite := 0, 0
	for i := 0; i+1 < len(buf); i += 2 {
		v := binary.LittleEndian.Uint16(buf[i:])
		if v == 0 {
			zeros++
		}
		if v&0x7F80 == 0x7F80 { // bf16 exponent all ones: Inf or NaN
			nonFinite++
		}
	}
	if nonFinite > 0 || zeros > len(buf)/2/100 {
		t.Errorf("%d non-finite and %d zero bf16 values of %d", nonFinite, zeros, len(buf)/2)
	}
}

func TestShardsBalancedAndSingle(t *testing.T) {
	l := generate(t, Options{Shards: 4, Layers: 8})
	checkShapes(t, l)
	var sizes []int64
	for _, s := range l.Shards {
		fi, err := os.Stat(filepath.Join(l.ModelDir, s))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	if sizes[0]*2 < sizes[len(sizes)-1] {
		t.Errorf("unbalanced shards %v", sizes)
	}

	one := generate(t, Options{Shards: 1})
	if fmt.Sprint(one.Shards) != "[model.safetensors]" {
		t.Errorf("Shards = %v", one.Shards)
	}
	checkShapes(t, one)

	// Every shard is non-empty even when one tensor dwarfs the rest.
	ts := []tensor{{"big", "BF16", []int64{1 << 20}, fillBF16}, {"a", "BF16", []int64{1}, fillBF16}, {"b", "BF16", []int64{1}, fillBF16}}
	for n := 1; n <= 3; n++ {
		parts := splitShards(ts, n)
		var names []string
		for _, p := range parts {
			if len(p) == 0 {
				t.Errorf("n=%d: empty shard in %v", n, parts)
			}
			for _, x := range p {
				names = append(names, x.name)
			}
		}
		if fmt.Sprint(names) != "[big a b]" {
			t.Errorf("n=%d: order %v", n, names)
		}
	}
}

func TestTokenizer(t *testing.T) {
	l := generate(t, Options{})
	c := readJSON(t, l, "model/config.json")
	tj := readJSON(t, l, "model/tokenizer.json")
	model := tj["model"].(map[string]any)
	if model["type"] != "BPE" || model["ignore_merges"] != true || model["byte_fallback"] != false {
		t.Errorf("model %v %v %v", model["type"], model["ignore_merges"], model["byte_fallback"])
	}
	vocab := map[string]int64{}
	ids := map[int64]string{}
	for tok, id := range model["vocab"].(map[string]any) {
		vocab[tok] = jsonInt(t, id)
		if prev, dup := ids[vocab[tok]]; dup {
			t.Errorf("id %d for %q and %q", vocab[tok], prev, tok)
		}
		ids[vocab[tok]] = tok
	}
	regular := int64(len(vocab))
	if regular < 400 || regular > 480 {
		t.Errorf("%d regular tokens, want ~400-480", regular)
	}
	for id := int64(0); id < regular; id++ {
		if _, ok := ids[id]; !ok {
			t.Errorf("vocab ids not contiguous: %d missing", id)
		}
	}
	_, sym := byteSymbols()
	symbols := map[string]bool{}
	for _, s := range sym {
		symbols[s] = true
		if _, ok := vocab[s]; !ok {
			t.Errorf("byte symbol %q not in vocab", s)
		}
	}
	if len(symbols) != 256 || ids[0] != "!" || ids[188] != "Ā" || vocab["Ġ"] != 220 {
		t.Errorf("byte table: %d symbols, id0 %q id188 %q Ġ=%d (GPT-2 has !, Ā, 220)", len(symbols), ids[0], ids[188], vocab["Ġ"])
	}
	merges := model["merges"].([]any)
	if len(merges) == 0 {
		t.Fatal("no merges")
	}
	type pair [2]string
	rank := map[pair]int{}
	for i, m := range merges {
		p := m.([]any)
		if len(p) != 2 {
			t.Fatalf("merge %d: %v", i, p)
		}
		a, b := p[0].(string), p[1].(string)
		for _, s := range []string{a, b, a + b} {
			if _, ok := vocab[s]; !ok {
				t.Errorf("merge %d (%q %q): %q not in vocab", i, a, b, s)
			}
		}
		if _, dup := rank[pair{a, b}]; dup {
			t.Errorf("merge %q %q twice", a, b)
		}
		rank[pair{a, b}] = i
	}

	// Added tokens follow the regular vocabulary, and the whole fits vocab_size.
	added := tj["added_tokens"].([]any)
	names := map[string]int64{}
	for i, a := range added {
		e := a.(map[string]any)
		id := jsonInt(t, e["id"])
		if id != regular+int64(i) || e["special"] != true {
			t.Errorf("added token %v: want id %d, special", e, regular+int64(i))
		}
		names[e["content"].(string)] = id
	}
	for _, s := range []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>"} {
		if _, ok := names[s]; !ok {
			t.Errorf("added_tokens lacks %s", s)
		}
	}
	if total := regular + int64(len(added)); total > jsonInt(t, c["vocab_size"]) || int(total) != TokenizerSize() {
		t.Errorf("tokenizer has %d tokens, vocab_size %v, TokenizerSize %d", total, c["vocab_size"], TokenizerSize())
	}
	if jsonInt(t, c["bos_token_id"]) != names["<|begin_of_text|>"] {
		t.Errorf("bos_token_id %v", c["bos_token_id"])
	}
	wantEOS := fmt.Sprint([]int64{names["<|end_of_text|>"], names["<|eom_id|>"], names["<|eot_id|>"]})
	if got := fmt.Sprint(c["eos_token_id"]); got != wantEOS {
		t.Errorf("eos_token_id %s, want %s", got, wantEOS)
	}
	pre, _ := json.Marshal(tj["pre_tokenizer"])
	if !bytes.Contains(pre, []byte(`\\s+(?!\\S)`)) || !bytes.Contains(pre, []byte(`"use_regex":false`)) {
		t.Errorf("pre_tokenizer %s", pre)
	}
	for _, k := range []string{"truncation", "padding", "normalizer"} {
		if v, ok := tj[k]; !ok || v != nil {
			t.Errorf("%s = %v, want null", k, v)
		}
	}

	// Encode with the merges the way the BPE model does and decode back: every piece is in vocab.
	unsym := map[string]byte{}
	for b, s := range sym {
		unsym[s] = byte(b)
	}
	text := "The lifeboat's crew rowed 42 times around the harbour, and nobody asked why."
	var decoded []byte
	tokens := 0
	for _, word := range regexp.MustCompile(trainPattern).FindAllString(text, -1) {
		var parts []string
		for i := 0; i < len(word); i++ {
			parts = append(parts, sym[word[i]])
		}
		for {
			best, at := -1, -1
			for i := 0; i+1 < len(parts); i++ {
				if r, ok := rank[pair{parts[i], parts[i+1]}]; ok && (best < 0 || r < best) {
					best, at = r, i
				}
			}
			if best < 0 {
				break
			}
			parts = append(parts[:at], append([]string{parts[at] + parts[at+1]}, parts[at+2:]...)...)
		}
		for _, p := range parts {
			if _, ok := vocab[p]; !ok {
				t.Errorf("encoded piece %q not in vocab", p)
			}
			for _, r := range p {
				decoded = append(decoded, unsym[string(r)])
			}
			tokens++
		}
	}
	if string(decoded) != text || tokens > len(text)*2/3 {
		t.Errorf("round trip %q in %d tokens", decoded, tokens)
	}

	tc := readJSON(t, l, "model/tokenizer_config.json")
	if tc["tokenizer_class"] != "PreTrainedTokenizerFast" || tc["bos_token"] != "<|begin_of_text|>" || tc["eos_token"] != "<|eot_id|>" {
		t.Errorf("tokenizer_config %v", tc)
	}
	dec := tc["added_tokens_decoder"].(map[string]any)
	for s, id := range names {
		e, ok := dec[fmt.Sprint(id)].(map[string]any)
		if !ok || e["content"] != s || e["special"] != true {
			t.Errorf("added_tokens_decoder[%d] = %v, want %s", id, e, s)
		}
	}
	tmpl := tc["chat_template"].(string)
	for _, s := range []string{"{% for message in loop_messages %}", "<|start_header_id|>", "message['content'] | trim", "<|eot_id|>", "add_generation_prompt", "bos_token", "<|end_header_id|>\n\n"} {
		if !strings.Contains(tmpl, s) {
			t.Errorf("chat_template lacks %q", s)
		}
	}
	stm := readJSON(t, l, "model/special_tokens_map.json")
	if stm["bos_token"].(map[string]any)["content"] != "<|begin_of_text|>" || stm["eos_token"].(map[string]any)["content"] != "<|eot_id|>" {
		t.Errorf("special_tokens_map %v", stm)
	}
}

func TestAWQ(t *testing.T) {
	l := generate(t, Options{Quant: "awq"})
	checkShapes(t, l)
	c := readJSON(t, l, "model/config.json")
	q := c["quantization_config"].(map[string]any)
	g := jsonInt(t, q["group_size"])
	if q["quant_method"] != "awq" || jsonInt(t, q["bits"]) != 4 || q["zero_point"] != true || q["version"] != "gemm" || c["torch_dtype"] != "float16" {
		t.Errorf("config %v / %v", c["torch_dtype"], q)
	}
	if g != 32 || int(g) != l.GroupSize || jsonInt(t, c["hidden_size"])%g != 0 || jsonInt(t, c["intermediate_size"])%g != 0 {
		t.Errorf("group size %d (layout %d)", g, l.GroupSize)
	}
	got, _ := allTensors(t, l)
	proj := regexp.MustCompile(`_proj\.(qweight|qzeros|scales|weight)$`)
	kinds := map[string]int{}
	for name, ti := range got {
		m := proj.FindStringSubmatch(name)
		if m == nil {
			if ti.DType != "F16" {
				t.Errorf("%s: %s, want F16", name, ti.DType)
			}
			continue
		}
		kinds[m[1]]++
		if m[1] == "weight" {
			t.Errorf("bare %s in an AWQ checkpoint", name)
		}
	}
	if n := 7 * l.Options.Layers; kinds["qweight"] != n || kinds["qzeros"] != n || kinds["scales"] != n {
		t.Errorf("quantized tensors %v, want %d of each", kinds, n)
	}
	eng, _ := os.ReadFile(l.EngineFile)
	if !bytes.Contains(eng, []byte("\nquantization: awq\n")) || !bytes.Contains(eng, []byte("\ndtype: float16\n")) {
		t.Errorf("engine.yaml:\n%s", eng)
	}
	// 128 when the sizes allow.
	if l := generate(t, Options{Quant: "awq", Hidden: 256, Intermediate: 512, NoLoRA: true}); l.GroupSize != 128 {
		t.Errorf("group size %d for 256/512", l.GroupSize)
	}
}

func TestLoRA(t *testing.T) {
	l := generate(t, Options{ModelName: "acme/Foo-7B", ServedName: "foo"})
	ac := readJSON(t, l, "model/loras/sql-lora/adapter_config.json")
	if ac["peft_type"] != "LORA" || ac["task_type"] != "CAUSAL_LM" || ac["base_model_name_or_path"] != "acme/Foo-7B" ||
		jsonInt(t, ac["r"]) != 8 || jsonInt(t, ac["lora_alpha"]) != 16 || ac["use_dora"] != false || ac["bias"] != "none" ||
		ac["inference_mode"] != true || ac["fan_in_fan_out"] != false || fmt.Sprint(ac["target_modules"]) != "[q_proj v_proj]" {
		t.Errorf("adapter_config %v", ac)
	}
	if v, ok := ac["modules_to_save"]; !ok || v != nil {
		t.Errorf("modules_to_save = %v, want null", v)
	}
	ts := readSafetensors(t, l.Path("model/loras/sql-lora/adapter_model.safetensors"))
	o := l.Options
	if len(ts) != 4*o.Layers {
		t.Errorf("%d adapter tensors", len(ts))
	}
	kv := int64(o.KVHeads * l.HeadDim)
	for n := 0; n < o.Layers; n++ {
		p := fmt.Sprintf("base_model.model.model.layers.%d.self_attn.", n)
		for name, shape := range map[string][]int64{
			"q_proj.lora_A.weight": {8, int64(o.Hidden)}, "q_proj.lora_B.weight": {int64(o.Hidden), 8},
			"v_proj.lora_A.weight": {8, int64(o.Hidden)}, "v_proj.lora_B.weight": {kv, 8},
		} {
			if fmt.Sprint(ts[p+name].Shape) != fmt.Sprint(shape) {
				t.Errorf("%s%s: %v, want %v", p, name, ts[p+name].Shape, shape)
			}
		}
	}
	eng, _ := os.ReadFile(l.EngineFile)
	if !bytes.Contains(eng, []byte(`  - '{"name":"sql-lora","path":"/models/Foo-7B/loras/sql-lora","base_model_name":"foo"}'`)) {
		t.Errorf("engine.yaml:\n%s", eng)
	}

	no := generate(t, Options{NoLoRA: true})
	if no.LoRAName != "" {
		t.Errorf("LoRAName %q", no.LoRAName)
	}
	if _, err := os.Stat(no.Path("model/loras")); !os.IsNotExist(err) {
		t.Errorf("loras dir with NoLoRA: %v", err)
	}
	eng, _ = os.ReadFile(no.EngineFile)
	if bytes.Contains(eng, []byte("lora")) {
		t.Errorf("engine.yaml with NoLoRA:\n%s", eng)
	}
}

// yamlValue finds "key: value" at the given indentation (a line-level check; the tests use the
// standard library only).
func yamlValues(doc, key string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		s := strings.TrimLeft(line, " -")
		if v, ok := strings.CutPrefix(s, key+": "); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestEngineAndDeploy(t *testing.T) {
	l := generate(t, Options{ServedName: "llama-demo", MaxModelLen: 4096})
	eng, _ := os.ReadFile(l.EngineFile)
	e := string(eng)
	for k, v := range map[string]string{
		"model": "/models/Llama-3.1-8B-Instruct-demo", "served-model-name": "llama-demo", "dtype": "bfloat16",
		"max-model-len": "4096", "gpu-memory-utilization": "0.90", "tensor-parallel-size": "1",
		"enable-prefix-caching": "true", "enable-lora": "true", "max-lora-rank": "16", "max-loras": "4", "port": "8000",
	} {
		if got := yamlValues(e, k); len(got) != 1 || got[0] != v {
			t.Errorf("engine %s = %v, want %s", k, got, v)
		}
	}
	if strings.Contains(e, "quantization") {
		t.Error("bf16 engine config sets quantization")
	}
	var mod map[string]string
	for _, line := range strings.Split(e, "\n") {
		if s, ok := strings.CutPrefix(line, "  - '"); ok {
			if err := json.Unmarshal([]byte(strings.TrimSuffix(s, "'")), &mod); err != nil {
				t.Fatal(err)
			}
		}
	}
	if mod["name"] != "sql-lora" || !strings.HasPrefix(mod["path"], l.ModelMount+"/") || mod["base_model_name"] != "llama-demo" {
		t.Errorf("lora module %v", mod)
	}

	dep, _ := os.ReadFile(l.Path("deploy/deployment.yaml"))
	d := string(dep)
	docs := strings.Split(d, "\n---\n")
	if len(docs) != 2 || !strings.HasPrefix(docs[0], "apiVersion: apps/v1\nkind: Deployment\n") || !strings.HasPrefix(docs[1], "apiVersion: v1\nkind: Service\n") {
		t.Errorf("deployment.yaml documents:\n%s", d)
	}
	digest := regexp.MustCompile(`^vllm/vllm-openai@sha256:[0-9a-f]{64}$`)
	if img := yamlValues(d, "image"); len(img) != 1 || !digest.MatchString(img[0]) {
		t.Errorf("image %v", img)
	}
	if got := yamlValues(d, "mountPath"); !slices.Contains(got, l.ModelMount) || !slices.Contains(got, "/etc/vllm") {
		t.Errorf("mountPaths %v, want %s and /etc/vllm", got, l.ModelMount)
	}
	for _, s := range []string{`args: ["--config", "/etc/vllm/engine.yaml"]`, "name: vllm\n", "path: /health", "nvidia.com/gpu:", "persistentVolumeClaim:", "configMap:", "containerPort: 8000", "matchLabels:"} {
		if !strings.Contains(d, s) {
			t.Errorf("deployment.yaml lacks %q", s)
		}
	}

	df, _ := os.ReadFile(l.Path("deploy/Dockerfile"))
	from := regexp.MustCompile(`(?m)^FROM (\S+)$`).FindStringSubmatch(string(df))
	if from == nil || !digest.MatchString(from[1]) || !strings.Contains(d, from[1]) {
		t.Errorf("Dockerfile FROM %v", from)
	}
	if !strings.Contains(string(df), "COPY engine/engine.yaml /etc/vllm/engine.yaml") || !strings.Contains(string(df), "ENTRYPOINT") {
		t.Errorf("Dockerfile:\n%s", df)
	}
	lock, _ := os.ReadFile(l.Path("deploy/requirements.lock"))
	pins := regexp.MustCompile(`(?m)^[a-z0-9-]+==[0-9.]+ \\$`).FindAllString(string(lock), -1)
	hashes := regexp.MustCompile(`(?m)^    --hash=sha256:[0-9a-f]{64}( \\)?$`).FindAllString(string(lock), -1)
	if len(pins) < 3 || len(hashes) != 2*len(pins) {
		t.Errorf("requirements.lock: %d pins, %d hashes:\n%s", len(pins), len(hashes), lock)
	}
}

func TestTargetBytes(t *testing.T) {
	const target = 64 << 20
	for _, q := range []string{"", "awq"} {
		l := generate(t, Options{TargetBytes: target, Quant: q})
		if d := float64(l.WeightBytes-target) / target; d < -0.1 || d > 0.1 {
			t.Errorf("quant %q: %d weight bytes for target %d (%.1f%%)", q, l.WeightBytes, target, 100*d)
		}
		checkShapes(t, l)
		if o := l.Options; o.Hidden/o.Heads > 128 || o.Layers < 1 {
			t.Errorf("scaled to %+v", o)
		}
	}
	// Smaller than a one-layer model: one layer.
	if l := generate(t, Options{TargetBytes: 1000}); l.Options.Layers != 1 {
		t.Errorf("tiny target: %d layers", l.Options.Layers)
	}
}

func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Hidden: 66}, "Hidden must be a multiple of Heads"},
		{Options{Heads: 4, KVHeads: 3}, "Heads must be a multiple of KVHeads"},
		{Options{VocabSize: 300}, "smaller than the tokenizer"},
		{Options{Layers: -1}, "Layers must be positive"},
		{Options{Shards: 1000}, "Shards 1000 exceeds"},
		{Options{Quant: "gptq"}, `Quant must be "" or "awq"`},
		{Options{Quant: "awq", Hidden: 48, Heads: 4, KVHeads: 2}, "multiples of 32"},
		{Options{MaxModelLen: 1 << 20}, "exceeds max_position_embeddings"},
		{Options{ModelName: "has space/x"}, "ModelName"},
		{Options{ModelName: "org/"}, "ModelName"},
		{Options{ServedName: "a'b"}, "ServedName"},
		{Options{TargetBytes: -1}, "TargetBytes"},
		{Options{Hidden: 12, Heads: 4, KVHeads: 2}, "head_dim"},
	} {
		_, err := Generate(context.Background(), t.TempDir(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sample: ") {
			t.Errorf("%+v: err %v, want %q", tc.opts, err, tc.want)
		}
	}
	if _, err := Generate(context.Background(), "", Options{}); err == nil {
		t.Error("empty dir name accepted")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if _, err := Generate(context.Background(), dir, Options{}); !errors.Is(err, ErrDirNotEmpty) {
		t.Errorf("non-empty dir: %v", err)
	}
}

// cancelWriter cancels its context after a number of writes.
type cancelWriter struct {
	n      int
	cancel context.CancelFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	if w.n--; w.n == 0 {
		w.cancel()
	}
	return len(p), nil
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelWriter{n: 3, cancel: cancel} // length, header, first MiB
	ts := []tensor{{"big", "BF16", []int64{64 << 20}, fillBF16}}
	if err := writeSafetensors(ctx, w, ts, 0); !errors.Is(err, context.Canceled) || w.n != 0 {
		t.Errorf("mid-stream cancel: err %v after %d extra writes", err, -w.n)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, err := Generate(ctx, dir, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Generate: %v", err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.Contains(p, ".tmp-") || strings.HasSuffix(p, ".safetensors")) {
			t.Errorf("left behind %s", p)
		}
		return err
	})
}

func TestMutateJSON(t *testing.T) {
	l := generate(t, Options{NoLoRA: true})
	err := l.MutateJSON("model/config.json", func(doc map[string]any) error {
		delete(doc, "rope_scaling")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := readJSON(t, l, "model/config.json")
	if _, ok := c["rope_scaling"]; ok || fmt.Sprint(c["rope_theta"]) != "500000.0" {
		t.Errorf("after mutate: %v", c)
	}
}

func TestLayoutPath(t *testing.T) {
	l := &Layout{Root: filepath.FromSlash("/r")}
	if got := l.Path("model/config.json"); got != filepath.FromSlash("/r/model/config.json") {
		t.Errorf("Path = %s", got)
	}
}

// BenchmarkGenerate measures streaming a 256 MiB checkpoint (MB/s counts tensor bytes).
func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		l, err := Generate(context.Background(), dir, Options{TargetBytes: 256 << 20, NoLoRA: true})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(l.WeightBytes)
		os.RemoveAll(dir)
	}
}
