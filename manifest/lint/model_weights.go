package lint

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"lifeboat/manifest/modelrepo"
)

const modelIndexRel = "model.safetensors.index.json"

func checkLFSPointers(c *Context) {
	hits := c.modelLFSPointers()
	paths := make([]string, 0, len(hits))
	for p := range hits {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		h := hits[p]
		role := c.ModelFiles()[strings.TrimPrefix(p, "model/")].Role
		if h.pointer == nil {
			c.Errorf(p, "", "%s (role %s) is a Git LFS pointer, not the file itself (the pointer is also malformed: %v)", p, role, h.err)
			continue
		}
		c.Errorf(p, "", "%s (role %s) is a Git LFS pointer to a %d-byte object (sha256:%s), not the file itself: the LFS object was never downloaded", p, role, h.pointer.Size, h.pointer.OID)
	}
}

func checkSafetensorsHeaders(c *Context) {
	bad := c.modelSafetensorsScan().bad
	paths := make([]string, 0, len(bad))
	for p := range bad {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		err := bad[p]
		what := "corrupt header"
		if errors.Is(err, modelrepo.ErrTruncated) {
			what = "truncated file"
		}
		c.Errorf(p, "", "%s: %s: %v", p, what, err)
	}
}

func checkSafetensorsIndex(c *Context) {
	shards := c.modelShards()
	if !c.HasModelFile(modelIndexRel) {
		checkDuplicateTensors(c, shards)
		return
	}
	const ip = "model/" + modelIndexRel
	data, skip, err := c.modelReadFile(modelIndexRel)
	if skip {
		return
	}
	var ix *modelrepo.SafetensorsIndex
	if err == nil {
		ix, err = modelrepo.ParseSafetensorsIndex(data, ip)
	}
	if err != nil {
		c.Errorf(ip, "", "%v", err)
		return
	}
	named := map[string]bool{}
	for _, s := range ix.Shards() {
		named["model/"+s] = true
		if !c.HasModelFile(s) {
			n, example := modelIndexTensorsOf(ix, s)
			c.Errorf(ip, "", "%s: weight_map names shard %s (%d tensors, e.g. %s) but the manifest has no such file: vLLM stops with \"weights were not initialized\"", ip, s, n, example)
		}
	}
	var listed []string
	for _, p := range shards {
		if strings.HasPrefix(strings.TrimPrefix(p, "model/"), "consolidated") {
			continue // the mistral-format copy has its own index
		}
		if !named[p] {
			c.Errorf(p, "", "%s is not named by %s weight_map: vLLM loads only the shards the index names, so its tensors are ignored", p, ip)
			continue
		}
		listed = append(listed, p)
	}
	checkIndexedTensors(c, ix, ip)
	checkDuplicateTensors(c, listed)
	checkTotalSize(c, ix, ip)
}

// modelIndexTensorsOf counts the tensors the index maps to shard and returns the first by name.
func modelIndexTensorsOf(ix *modelrepo.SafetensorsIndex, shard string) (int, string) {
	var names []string
	for t, s := range ix.WeightMap {
		if s == shard {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	return len(names), names[0]
}

// checkIndexedTensors reports tensors the index maps to a shard whose header lacks them.
func checkIndexedTensors(c *Context, ix *modelrepo.SafetensorsIndex, ip string) {
	headers := c.SafetensorsHeaders()
	missing := map[string][]string{} // shard path → tensor names
	names := map[string]map[string]bool{}
	for tensor, shard := range ix.WeightMap {
		p := "model/" + shard
		h, ok := headers[p]
		if !ok {
			continue // absent or unreadable: reported above or by safetensors-header
		}
		if names[p] == nil {
			names[p] = modelTensorNames(h)
		}
		if !names[p][tensor] {
			missing[p] = append(missing[p], tensor)
		}
	}
	for _, p := range modelSortedKeys(missing) {
		ts := missing[p]
		sort.Strings(ts)
		c.Errorf(ip, "", "%s: weight_map puts %d tensors in %s that its header does not have (e.g. %s): the index and the shard come from different exports", ip, len(ts), p, ts[0])
	}
}

func modelTensorNames(h *modelrepo.SafetensorsHeader) map[string]bool {
	m := make(map[string]bool, len(h.Tensors))
	for _, t := range h.Tensors {
		m[t.Name] = true
	}
	return m
}

// checkDuplicateTensors reports tensors stored in more than one shard.
func checkDuplicateTensors(c *Context, shards []string) {
	headers := c.SafetensorsHeaders()
	first := map[string]string{} // tensor → shard that has it first
	type pair struct{ a, b string }
	dups := map[pair][]string{}
	for _, p := range shards {
		h, ok := headers[p]
		if !ok {
			continue
		}
		for _, t := range h.Tensors {
			if q, seen := first[t.Name]; seen {
				dups[pair{q, p}] = append(dups[pair{q, p}], t.Name)
				continue
			}
			first[t.Name] = p
		}
	}
	keys := make([]pair, 0, len(dups))
	for k := range dups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].a+"\x00"+keys[i].b < keys[j].a+"\x00"+keys[j].b })
	for _, k := range keys {
		ts := dups[k]
		sort.Strings(ts)
		c.Errorf(k.b, "", "%s repeats %d tensors of %s (e.g. %s): a tensor must live in exactly one shard", k.b, len(ts), k.a, ts[0])
	}
}

// checkTotalSize compares metadata.total_size with the tensor bytes of the named shards, when
// every one of them has a readable header.
func checkTotalSize(c *Context, ix *modelrepo.SafetensorsIndex, ip string) {
	if !ix.HasTotalSize {
		return
	}
	headers := c.SafetensorsHeaders()
	var sum int64
	for _, s := range ix.Shards() {
		h, ok := headers["model/"+s]
		if !ok {
			return
		}
		sum += h.DataSize
	}
	if sum != ix.TotalSize {
		c.Errorf(ip, "", "%s: metadata.total_size is %d but the shards it names hold %d bytes of tensors: the index belongs to another export", ip, ix.TotalSize, sum)
	}
}

func modelSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// modelIsEmbeddingTensor recognises the token embedding and the output projection of common
// architectures, leaving out vision and audio towers of multimodal models.
func modelIsEmbeddingTensor(name string) bool {
	for _, skip := range []string{"vision", "visual", "audio", "image", "mm_projector", "multi_modal"} {
		if strings.Contains(name, skip) {
			return false
		}
	}
	if name == "lm_head.weight" || strings.HasSuffix(name, ".lm_head.weight") || name == "output.weight" || name == "embed_out.weight" {
		return true
	}
	for _, suf := range []string{"embed_tokens.weight", "wte.weight", "word_embeddings.weight", "tok_embeddings.weight", "embed_in.weight"} {
		if name == suf || strings.HasSuffix(name, "."+suf) {
			return true
		}
	}
	return false
}

func checkEmbeddingVocabSize(c *Context) {
	cfg, err := c.ModelConfig()
	if err != nil || cfg == nil || cfg.VocabSize <= 0 {
		return
	}
	headers := c.SafetensorsHeaders()
	for _, p := range c.modelShards() {
		h, ok := headers[p]
		if !ok {
			continue
		}
		for _, t := range h.Tensors {
			if !modelIsEmbeddingTensor(t.Name) || len(t.Shape) < 2 || t.Shape[0] == cfg.VocabSize {
				continue
			}
			c.Errorf(p, "", "%s: tensor %s has shape %s, but %s vocab_size is %d: the first dimension must equal it, or vLLM fails to load the weights",
				p, t.Name, modelShapeString(t.Shape), modelConfigPath, cfg.VocabSize)
		}
	}
}

func modelShapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
