/* prompt.h — from user text to prompt token ids: the model's chat template (a user message,
 * optional system message, generation prompt) unless raw, then the model's tokenizer. */
#ifndef E0_PROMPT_H
#define E0_PROMPT_H

#include <jansson.h>
#include <stdbool.h>

#include "engine/model.h"
#include "text/tokenizer.h"

typedef struct e0_prompt {
    int *ids;
    int n;
    bool templated; /* the chat template was applied */
} e0_prompt;

/* The model's tokenizer (from its GGUF metadata). */
e0_tokenizer *e0_model_tokenizer(const e0_model *m, e0_err *e);
/* Chat template text of the model, or NULL when it has none. */
const char *e0_model_chat_template(const e0_model *m, size_t *len);
/* Render `messages` (JSON array) with the model's template; text is malloc'd. */
int e0_render_chat(const e0_model *m, const e0_tokenizer *tok, const json_t *messages, bool add_generation_prompt,
                   char **text, size_t *len, e0_err *e);
/* Tokenize templated text: special tokens parsed; BOS added when the vocabulary asks for it and
 * the text does not already start with it. */
int e0_tokenize_prompt(const e0_tokenizer *tok, const char *text, size_t len, bool templated, e0_tokens *out,
                       e0_err *e);
/* user text -> ids; with system (may be NULL). Raw: tokenized as is (BOS per the vocabulary, no
 * special-token parsing). */
int e0_prompt_build_ex(const e0_model *m, const e0_tokenizer *tok, const char *system, const char *user, bool raw,
                       e0_prompt *p, e0_err *e);
int e0_prompt_build(const e0_model *m, const char *user, bool raw, e0_prompt *p, e0_err *e);
void e0_prompt_free(e0_prompt *p);
/* A chat message {"role": role, "content": text} for the template. Text that is not valid UTF-8
 * (JSON strings must be) has each invalid byte replaced by U+FFFD. NULL only when out of memory. */
json_t *e0_chat_message(const char *role, const char *text, size_t len);

#endif
