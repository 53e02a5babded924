package lint

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// modelChatScan is every chat template of the model, found once.
type modelChatScan struct {
	all []modelrepo.ChatTemplate
	// effective is the template a chat request uses by default, following transformers' order:
	// chat_template.jinja, then chat_template.json, then tokenizer_config.json. nil when none.
	effective *modelrepo.ChatTemplate
	// shadowed lists templates (by label) that a higher-precedence file overrides.
	shadowed map[string]string
	bad      []modelBadFile
}

func (c *Context) modelChatTemplates() *modelChatScan {
	v, _ := c.Memo("model:chat-templates", func() (any, error) {
		s := &modelChatScan{shadowed: map[string]string{}}
		var jinjaDefault, jsonDefault, configDefault *modelrepo.ChatTemplate
		// .jinja files anywhere in the model (chat_template.jinja, additional_chat_templates/*.jinja)
		for _, f := range c.Manifest.PartFiles(manifest.PartModel) {
			if f.Role != manifest.RoleChatTemplate || !strings.HasSuffix(strings.ToLower(f.Path), ".jinja") {
				continue
			}
			rel := strings.TrimPrefix(f.Path, "model/")
			data, skip, err := c.modelReadFile(rel)
			if skip {
				continue
			}
			if err == nil && !utf8.Valid(data) {
				err = fmt.Errorf("%s: not UTF-8 text", f.Path)
			}
			if err != nil {
				s.bad = append(s.bad, modelBadFile{f.Path, err})
				continue
			}
			t := modelrepo.ChatTemplate{Source: f.Path, Name: strings.TrimSuffix(path.Base(rel), path.Ext(rel)), Text: string(data)}
			if rel == "chat_template.jinja" {
				t.Name = "default"
				jinjaDefault = &t
			}
			s.all = append(s.all, t)
		}
		if c.HasModelFile("chat_template.json") {
			data, skip, err := c.modelReadFile("chat_template.json")
			if !skip {
				var ts []modelrepo.ChatTemplate
				if err == nil {
					ts, err = modelrepo.ParseChatTemplateJSON(data, "model/chat_template.json")
				}
				if err != nil {
					s.bad = append(s.bad, modelBadFile{"model/chat_template.json", err})
				}
				s.all = append(s.all, ts...)
				jsonDefault = modelDefaultTemplate(ts)
			}
		}
		if tc := c.modelTokenizers().config; tc != nil {
			s.all = append(s.all, tc.ChatTemplates...)
			configDefault = modelDefaultTemplate(tc.ChatTemplates)
		}
		for _, t := range []*modelrepo.ChatTemplate{jinjaDefault, jsonDefault, configDefault} {
			if t == nil {
				continue
			}
			if s.effective == nil {
				s.effective = t
			} else {
				s.shadowed[t.Label()] = s.effective.Source
			}
		}
		return s, nil
	})
	return v.(*modelChatScan)
}

// modelDefaultTemplate picks the template used when none is named: "default", or the only one.
func modelDefaultTemplate(ts []modelrepo.ChatTemplate) *modelrepo.ChatTemplate {
	for i := range ts {
		if ts[i].Name == "default" {
			return &ts[i]
		}
	}
	if len(ts) == 1 {
		return &ts[0]
	}
	return nil
}

func checkChatTemplateMissing(c *Context) {
	if c.modelChatTemplates().effective != nil || c.modelEngineOverrides().chatTemplate != "" {
		return
	}
	// A template file is there but could not be read or parsed: other rules report that.
	if c.HasModelFile("chat_template.jinja") || c.HasModelFile("chat_template.json") ||
		(c.HasModelFile("tokenizer_config.json") && c.modelTokenizers().config == nil) {
		return
	}
	c.Warnf("model/", "", "model/ has no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json chat_template): the server boots, but every /v1/chat/completions request fails with HTTP 400")
}

func checkChatTemplateInvalid(c *Context) {
	s := c.modelChatTemplates()
	for _, b := range s.bad {
		c.Errorf(b.path, "", "%v", b.err)
	}
	for _, t := range s.all {
		err := modelrepo.CheckChatTemplate(t)
		if err == nil {
			continue
		}
		if winner, ok := s.shadowed[t.Label()]; ok {
			// vLLM never uses it while the winner exists, but it breaks as soon as that file goes.
			c.Warnf(t.Source, "", "%v (unused while %s exists, which takes precedence)", err, winner)
			continue
		}
		c.Errorf(t.Source, "", "%v", err)
	}
}

func checkChatTemplateRender(c *Context) {
	t := c.modelChatTemplates().effective
	if t == nil || modelrepo.CheckChatTemplate(*t) != nil {
		return // nothing to render, or chat-template-invalid already reports it
	}
	o := modelrepo.RenderOptions{}
	if tc := c.modelTokenizers().config; tc != nil {
		o.BOSToken, o.EOSToken = tc.BOSToken, tc.EOSToken
	}
	_, err := modelrepo.RenderChatTemplate(c.Ctx, *t, o)
	switch {
	case err == nil:
	case errors.Is(err, modelrepo.ErrRenderUnsupported):
		// A construct jinja2 accepts that the Go renderer does not run; not the template's fault.
		c.Log.Debug("chat template not rendered", "template", t.Label(), "reason", err)
	case errors.Is(err, modelrepo.ErrRenderLimit):
		c.Errorf(t.Source, "", "rendering a two-message chat exhausts the renderer's budget (unbounded recursion, a runaway loop or a huge string?): %v; every chat request to this model would fail", err)
	default:
		c.Warnf(t.Source, "", "rendering a two-message chat with add_generation_prompt=true failed: %v", err)
	}
}

func checkGenerationConfigMissing(c *Context) {
	if c.HasModelFile("generation_config.json") {
		return
	}
	if g := c.modelEngineOverrides().generationConfig; g != "" && g != "auto" {
		return // the engine takes generation defaults from elsewhere (vllm defaults or another folder)
	}
	c.Warnf("model/generation_config.json", "", "model/generation_config.json is not in the manifest: the server boots, but the model's extra stop tokens (e.g. <|eot_id|>) and its default temperature/top_p are lost, so generations may not stop")
}
