/* test_jinja.c — the chat-template renderer: every golden case in ../shared/templates (library,
 * and a sample through the CLI), unit cases for each construct/filter/test/method (expected
 * outputs produced by the reference, jinja2 3.1 configured like Hugging Face), error cases, and
 * hostile templates (runaway loops, huge output, deep nesting, macro recursion, mutations of real
 * templates) that must fail fast with a clear error and never crash. */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "text/jinja/jinja.h"
#include "t.h"

/* Unit cases: template source and jinja2's output for the variables UNIT_VARS.
 * Generated once with jinja2 3.1.6 (ImmutableSandboxedEnvironment(trim_blocks=True,
 * lstrip_blocks=True), loopcontrols, generation tag, HF's tojson/raise_exception). */
static const char *const UNIT_VARS = "{\"messages\": [{\"role\": \"system\", \"content\": \"Sys\"}, {\"role\": \"user\", \"content\": \"H\303\251llo w\303\266rld\"}, {\"role\": \"assistant\", \"content\": \"Hi!\"}], \"n\": 7, \"f\": 2.5, \"s\": \"  a,b,,c  \", \"l\": [3, 1, 2], \"d\": {\"b\": 1, \"a\": [1, 2], \"c\": null}, \"u\": \"\303\200\303\211\303\216\303\265\303\274\", \"t\": true, \"z\": 0, \"e\": \"\"}";
static const struct unit_case { const char *src, *expected; } UNIT_CASES[] = {
    {"{{ 1 }}|{{ -3 }}|{{ 1.5 }}|{{ 1e20 }}|{{ 0.1+0.2 }}|{{ 1/3 }}|{{ 2.0 }}|{{ 1e-7 }}|{{ none }}|{{ true }}|{{ False }}",
     "1|-3|1.5|1e+20|0.30000000000000004|0.3333333333333333|2.0|1e-07|None|True|False"},
    {"{{ [1,'a',none,true,1.0] }}|{{ {'k':'v','n':[1]} }}|{{ (1,) }}|{{ (1,2) }}|{{ () }}|{{ \"it's\" }}|{{ ['it\\'s', \"q\\\"\"] }}",
     "[1, 'a', None, True, 1.0]|{'k': 'v', 'n': [1]}|(1,)|(1, 2)|()|it's|[\"it's\", 'q\"']"},
    {"{{ 'a\\nb\\t\\\\' }}|{{ ['a\\nb'] }}|{{ '\\x41\\u00e9' }}|{{ 'x' 'y' }}",
     "a\nb\t\\|['a\\nb']|A\303\251|xy"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 1 + 2.5 }} {{ true + 1 }}",
     "3 -4 1 2 3.5 1024 0.5 3.0 ababab [1, 1, 1] [1, 2] ab 3.5 2"},
    {"{{ 1 ~ 2 ~ 'x' ~ none ~ undefined_thing }}|{{ -n|abs }}|{{ -(n) }}|{{ +n }}|{{ 2 + 3 * 4 ** 2 }}",
     "12xNone|7|-7|7|50"},
    {"{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 'b' in 'abc' }} {{ 4 not in l }} {{ 'a' in d }} {{ none == none }} {{ x == y }} {{ 1 != 2 }}",
     "True True True True True True True True True True"},
    {"{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ '' or [] }}|{{ not e }}|{{ 'y' if t else 'n' }}|{{ 'y' if z }}|{{ 'a' if z else 'b' if t else 'c' }}",
     "x|y|[]|True|y||b"},
    {"{{ d.b }} {{ d['a'][1] }} {{ d.a.0 }} {{ l[-1] }} {{ l[::-1] }} {{ l[1:] }} {{ l[:-1] }} {{ u[1:3] }} {{ u[::-2] }} {{ u[-1] }} {{ 'abcdef'[1:5:2] }} {{ l[5] }}|{{ d.missing }}|{{ messages[0].role }}",
     "1 2 1 2 [2, 1, 3] [1, 2] [3, 1] \303\211\303\216 \303\274\303\216\303\200 \303\274 bd ||system"},
    {"{{ messages[-1]['content'] }}|{{ (messages|last).role }}|{{ messages|length }}|{{ u|length }}|{{ d.items()|list }}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.get('b') }}|{{ d.get('q', 5) }}|{{ d.get('q') }}",
     "Hi!|assistant|3|5|[('b', 1), ('a', [1, 2]), ('c', None)]|['b', 'a', 'c']|[1, [1, 2], None]|1|5|None"},
    {"{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}|{% if undefined_var %}x{% else %}y{% endif %}|{% if l %}L{% endif %}",
     "mid|y|L"},
    {"{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}:{{ x }};{% endfor %}",
     "1032TrueFalse3:3;2121FalseFalse3:1;3210FalseTrue3:2;"},
    {"{% for x in l %}{{ loop.previtem|default('-') }}{{ x }}{{ loop.nextitem|default('-') }} {% endfor %}|{% for x in [] %}a{% else %}empty{% endfor %}|{% for x in l if x > 1 %}{{ loop.length }}{{ x }}{% endfor %}",
     "-31 312 12- |empty|2322"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c in 'h\303\251j' %}[{{ c }}]{% endfor %}|{% for a, b in [(1,2),(3,4)] %}{{ a+b }}{% endfor %}",
     "b=1;a=[1, 2];c=None;|bac|[h][\303\251][j]|37"},
    {"{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}|{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}|{{ range(3)|list }}",
     "0134|147|531|[0, 1, 2]"},
    {"{% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}{{ loop.index }} {% endfor %}|{% for x in l %}{{ loop.cycle('a','b') }}{% endfor %}",
     "1231 1232 1233 |aba"},
    {"{% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}|{% set ns = namespace(x=1, y='a') %}{% for i in l %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.y }}",
     "1|7a"},
    {"{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set t = (3, 4) %}{% set p, q = t %}{{ p * q }}|{% set blk %}inner {{ n }}{% endset %}[{{ blk }}]|{% set up | upper %}shout{% endset %}{{ up }}",
     "12|12|[inner 7]|SHOUT"},
    {"{% if true %}{% set inif = 5 %}{% endif %}{{ inif }}|{% set d2 = dict(a=1, b=2) %}{{ d2 }}|{% set ns = namespace(d) %}{{ ns.b }}",
     "5|{'a': 1, 'b': 2}|1"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', '?') }} {{ greet(punct='.', name='Cy') }}",
     "Hi Bob! Hi Al? Hi Cy."},
    {"{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}|{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, a=3) }}",
     "120|(1, 2){'a': 3}"},
    {"{{ s|trim }}|{{ s|trim|length }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world-x(y'|title }}|{{ 'hELLO'|capitalize }}|{{ u|upper }}|{{ u|lower }}",
     "a,b,,c|6|ABC|abc|Hello World-X(Y|Hello|\303\200\303\211\303\216\303\225\303\234|\303\240\303\251\303\256\303\265\303\274"},
    {"{{ 'aXbXc'|replace('X', '-') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ l|join(',') }}|{{ l|first }}|{{ l|last }}|{{ l|sort }}|{{ l|sort(reverse=true) }}|{{ ['b','A','c']|sort }}|{{ l|reverse|list }}|{{ 'abc'|reverse }}",
     "a-b-c|bba|3,1,2|3|2|[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|[2, 1, 3]|cba"},
    {"{{ l|sum }}|{{ l|min }}|{{ l|max }}|{{ [1,1,2,1]|unique|list }}|{{ 3.14159|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.7|round(0, 'floor') }}|{{ '42'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|{{ '2.5'|float }}|{{ 5|float }}|{{ 5|string }}|{{ -3|abs }}",
     "6|1|3|[1, 2]|3.14|2.0|4.0|2.0|42|0|7|3|2.5|5.0|5|3"},
    {"{{ d|dictsort }}|{{ d|items|list }}|{{ messages|map(attribute='role')|join(',') }}|{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|first }}|{{ messages|rejectattr('role', 'eq', 'user')|list|length }}|{{ l|select('odd')|list }}|{{ l|reject('odd')|list }}|{{ [0,1,'',none,'a']|select|list }}",
     "[('a', [1, 2]), ('b', 1), ('c', None)]|[('b', 1), ('a', [1, 2]), ('c', None)]|system,user,assistant|H\303\251llo w\303\266rld|2|[3, 1]|[2]|[1, 'a']"},
    {"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'x'|center(7) }}|{{ 'one two  three'|wordcount }}|{{ '<a & \"b\">'|escape }}|{{ undefined_var|default('dflt') }}|{{ ''|default('dflt') }}|{{ ''|default('dflt', true) }}|{{ l|batch(2)|list }}|{{ ['a','b']|map('upper')|list }}",
     "a\n  b\n\n  c|  a\n  b|   x   |3|&lt;a &amp; &#34;b&#34;&gt;|dflt||dflt|[[3, 1], [2]]|['A', 'B']"},
    {"{{ messages|tojson }}|{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ '\303\251\"\\n<>&'|tojson }}|{{ [1.0, 2.5, 1e20, none, true]|tojson }}|{{ d|tojson(sort_keys=true) }}|{{ {'a': [1, {'b': 2}]}|tojson(separators=(',', ':')) }}",
     "[{\"role\": \"system\", \"content\": \"Sys\"}, {\"role\": \"user\", \"content\": \"H\303\251llo w\303\266rld\"}, {\"role\": \"assistant\", \"content\": \"Hi!\"}]|{\"b\": 1, \"a\": [1, 2], \"c\": null}|{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"c\": null\n}|\"\303\251\\\"\\n<>&\"|[1.0, 2.5, 1e+20, null, true]|{\"a\": [1, 2], \"b\": 1, \"c\": null}|{\"a\":[1,{\"b\":2}]}"},
    {"{{ n is defined }}{{ nope is defined }}{{ nope is undefined }}{{ none is none }}{{ s is string }}{{ n is number }}{{ n is integer }}{{ f is float }}{{ t is boolean }}{{ d is mapping }}{{ l is sequence }}{{ s is iterable }}{{ n is iterable }}{{ t is true }}{{ z is false }}",
     "TrueFalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueFalse"},
    {"{{ n is odd }}{{ n is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ n is equalto 7 }}{{ n is eq 7 }}{{ none is sameas none }}{{ 3 is gt 2 }}{{ 2 is in l }}{{ n is not none }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ greet is defined }}",
     "TrueFalseTrueFalseTrueTrueTrueTrueTrueTrueTrueTrueFalse"},
    {"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ s.split(',') }}|{{ 'a b  c'.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a b '.split(none, 1) }}|{{ 'a b c'.rsplit(none, 1) }}",
     "a,b,,c|a,b,,c  |  a,b,,c|a|['  a', 'b', '', 'c  ']|['a', 'b', 'c']|['a', 'b,c']|['a,b', 'c']|['a', 'b ']|['a b', 'c']"},
    {"{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('lo', 'x')) }}{{ 'Hello'.startswith('lo') }}|{{ 'hello world'.title() }}|{{ 'hello'.capitalize() }}|{{ 'h\303\251llo'.upper() }}|{{ 'abcabc'.find('c') }}|{{ 'abcabc'.rfind('c') }}|{{ 'abc'.find('z') }}|{{ 'abcabc'.count('bc') }}|{{ 'abc'.index('c') }}",
     "TrueTrueFalse|Hello World|Hello|H\303\211LLO|2|5|-1|2|2"},
    {"{{ '{} and {}'.format('x', 1) }}|{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '{name}!'.format(name='N') }}|{{ '{{}}'.format() }}|{{ '-'.join(['a','b']) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}|{{ 'ab'.replace('a', 'A') }}|{{ 'x'.ljust(3, '.') }}|{{ 'x'.rjust(3) }}|{{ '7'.zfill(3) }}",
     "x and 1|aba|N!|{}|a-b|['a', 'b', 'c']|TrueTrueTrue|Ab|x..|  x|007"},
    {"{{ l.index(2) }}{{ l.count(3) }}|{{ 'x'.upper().lower() }}|{{ messages[1].content.split(' ')[0] }}",
     "21|x|H\303\251llo"},
    {"a\n  {% if true %}\n    b\n  {% endif %}\nc",
     "a\n    b\nc"},
    {"a\n  {%- if true -%}\n    b\n  {%- endif -%}\n  c",
     "abc"},
    {"a  {{- 'x' -}}  b|  {# comment #}\nz|  {#- c -#}  y",
     "axb|  z|y"},
    {"x {%+ if true %}y{% endif +%}\nz",
     "x y\nz"},
    {"{% raw %}{{ not rendered }}{% endraw %}|  {% raw -%}  r  {%- endraw %}|",
     "{{ not rendered }}|  r|"},
    {"line1\r\nline2\r\n{% if true %}\r\nx\r\n{% endif %}\r\n",
     "line1\nline2\nx\n"},
    {"  {{ 'v' }}\n  {% set q = 1 %}\n  end\n",
     "  v\n  end"},
    {"{% for m in messages %}\n  {{ m.role }}: {{ m.content }}\n{% endfor %}\n",
     "  system: Sys\n  user: H\303\251llo w\303\266rld\n  assistant: Hi!\n"},
    {"{%- for m in messages -%}\n<|{{ m.role }}|>\n{{ m.content | trim }}{{ '\\n' }}\n{%- endfor -%}",
     "<|system|>\nSys\n<|user|>\nH\303\251llo w\303\266rld\n<|assistant|>\nHi!\n"},
    {"{% generation %}gen {{ n }}{% set inner = 1 %}{% endgeneration %}{{ inner is defined }}|{% filter upper %}abc {{ n }}{% endfilter %}",
     "gen 7False|ABC 7"},
    {"{{ messages|selectattr('role', 'in', ['user', 'system'])|list|length }}|{{ (l|list + [9])|sort|last }}|{{ {'a': 1}.items()|list }}|{{ 'ab' * 0 }}|{{ [] is iterable }}|{{ strftime_now('%Y') is string }}",
     "2|9|[('a', 1)]||True|True"},
    {"{{ 1 if messages[0].role == 'system' else 0 }}{% set sys = messages[0].content if messages[0].role == 'system' else '' %}|{{ sys }}|{{ messages[1:]|map(attribute='role')|list }}",
     "1|Sys|['user', 'assistant']"},
    {"{{ '<b>'|safe + '<i>' }}|{{ '<i>' + '<b>'|safe }}|{{ '<b>'|safe ~ '<i>' }}|{{ '<x>'|escape|escape }}|{{ '<x>'|e }}|{{ ('a'|safe + 'b') is string }}|{{ 5|safe + '&' }}",
     "<b>&lt;i&gt;|&lt;i&gt;<b>|<b><i>|&lt;x&gt;|&lt;x&gt;|True|5&amp;"},
    {"{% if [] | select %}T{% else %}F{% endif %}|{% if [] | map('upper') %}T{% endif %}|{{ [1,2]|map('string')|join('-') }}|{{ l|select('odd')|first }}|{{ d|items|list|length }}|{{ l|unique|list }}|{{ l|batch(2)|list }}",
     "T|T|1-2|3|3|[3, 1, 2]|[[3, 1], [2]]"},
    {"\t{% if true %}\n\tx\n\t{% endif %}\n  {# c #}\n  {{ 'keep' }}\n  {%- if true %}\ny{% endif %}",
     "\tx\n  keepy"},
    {"{% for m in messages if m.role != 'system' %}{{ m.role }}{{ ',' if not loop.last }}{% endfor %}|{% for m in messages %}{% if loop.first %}F{% elif loop.last %}L{% else %}M{% endif %}{% endfor %}",
     "user,assistant|FML"},
    {"{{ '\316\243\316\212\316\243\316\245\316\246\316\237\316\243'|lower }}|{{ 'stra\303\237e'|upper }}|{{ '\303\251a'|capitalize }}|{{ '\303\274ber alles'|title }}|{{ '\304\263 \307\204'|length }}|{{ '\346\227\245\346\234\254\350\252\236'[1] }}|{{ '\346\227\245\346\234\254\350\252\236'[::-1] }}|{{ '\360\237\230\200x'|length }}",
     "\317\203\316\257\317\203\317\205\317\206\316\277\317\202|STRASSE|\303\211a|\303\234ber Alles|3|\346\234\254|\350\252\236\346\234\254\346\227\245|2"},
    {"{% set x = [1, 2] %}{% set y = x + [3] %}{{ x }}{{ y }}|{% set ns = namespace(items=[]) %}{% for i in range(3) %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.items }}|{{ namespace(a=1).a }}",
     "[1, 2][1, 2, 3]|[0, 1, 2]|1"},
    {"{% macro tag(name, body='') -%}\n<{{ name }}>{{ body }}</{{ name }}>\n{%- endmacro %}\n{{ tag('a', 'x') }}\n{{ tag('b') }}",
     "<a>x</a>\n<b></b>"},
    {"{{ messages[0] }}|{{ messages[5] is defined }}|{{ messages[-5] is defined }}|{{ d['zz'] | default('none') }}|{{ d.c is none }}|{{ d.c is defined }}",
     "{'role': 'system', 'content': 'Sys'}|False|False|none|True|True"},
    {"{{ 10 / 4 }} {{ 10 // 4 }} {{ 2 ** 0.5 }} {{ 1e3 }} {{ 100000000000000000000.0 }} {{ 1.5e-10 }} {{ 3.0 * 2 }} {{ 7 % -3 }} {{ -7.5 % 2 }} {{ 0.1 * 3 }}",
     "2.5 2 1.4142135623730951 1000.0 1e+20 1.5e-10 6.0 -2 0.5 0.30000000000000004"},
    {"{{ '\316\221\316\243.'|lower }}|{{ '\307\260\305\270\341\217\270\316\243.\341\276\274'|lower }}|{{ '\341\272\236\316\243_\303\277'|title }}|{{ '\357\254\203 \305\211'|upper }}|{{ '\307\206a'|capitalize }}|{{ '\307\206a b\316\243'.title() }}|{{ '\304\260'|lower|length }}",
     "\316\261\317\202.|\307\260\303\277\341\217\270\317\203.\341\276\263|\341\272\236\317\203_\303\277|FFI \312\274N|\307\205a|\307\205a B\317\202|2"},
    {"{% with a = 1, b = n %}{{ a + b }}{% set c = 3 %}{% endwith %}{{ a is defined }}{{ c is defined }}|{% for i in l %}{% with j = i * 2 %}{% if j > 4 %}{% break %}{% endif %}{{ j }}{% endwith %}{% endfor %}",
     "8FalseFalse|"},
    {"{{ '%s and %s' % ('a', 1) }}|{{ '%d%%' % 42 }}|{{ 'x=%r' % ('q',) }}|{{ '%s' % none }}|{{ '%i' % 3.9 }}|{{ '%s' % [1, 2] }}",
     "a and 1|42%|x='q'|None|3|[1, 2]"},
    {"{{ [{'f': {'n': 'x'}}, {'f': {'n': 'y'}}]|map(attribute='f.n')|join }}|{{ [[1, 2], [0, 5]]|map(attribute='1')|list }}|{{ [{'a': [3]}, {'a': [1]}]|sort(attribute='a.0')|map(attribute='a.0')|list }}|{{ messages|map(attribute='nope')|list }}|{{ messages|map(attribute='nope', default='-')|join }}",
     "xy|[2, 5]|[1, 3]|[Undefined, Undefined, Undefined]|---"},
    {"{{ 5|round }}|{{ 5|round(0, 'floor') }}|{{ 2.5 is odd }}|{{ 3.0 is odd }}|{{ 7.5 is divisibleby 2.5 }}|{{ 2.5 % -2.5 }}|{{ {'a': 1} is lower }}|{{ nope|list }}|{{ nope|first is defined }}|{{ nope|sort }}|{{ nope|join }}|{{ 1|select is iterable }}|{{ none|items is defined }}",
     "5|5.0|False|True|True|-0.0|True|[]|False|[]||True|True"},
    {"{{ 'a' ~ 1.0 ~ [1.5] ~ {'x': none} }}|{{ 10000000000000000.0 }}|{{ 123456789012345.6 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ -0.0 }}|{{ 1e300 * 1e300 }}",
     "a1.0[1.5]{'x': None}|1e+16|123456789012345.6|0.0001|1e-05|-0.0|inf"},
};
static const struct unit_err { const char *src, *msg; } UNIT_ERRORS[] = {
    {"{{ 1|select|list }}", "'int' object is not iterable"},
    {"{{ 'a' in none|items }}", "Can only get item pairs from a mapping"},
    {"{{ nope|dictsort }}", "'nope' is undefined"},
    {"{{ [1] in {'a': 1} }}", "unhashable type"},
    {"{{ [1]|map('string')|length }}", "has no len()"},
    {"{{ [1]|select|tojson }}", "not JSON serializable"},
    {"{{ [1]|map('string')|last }}", "not reversible"},
    {"{{ raise_exception('boom ' ~ n) }}", "boom 7"},
    {"{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}", "Conversation roles must alternate"},
    {"{{ nope.attr }}", "'nope' is undefined"},
    {"{{ l.append(4) }}", "unsafe"},
    {"{{ 1 / 0 }}", "division by zero"},
    {"{{ 'a' < 1 }}", "not supported between"},
    {"{{ 1 + 'a' }}", "unsupported operand"},
};

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    size_t r;
    while (p && (r = fread(p + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) { cap *= 2; p = realloc(p, cap); }
    }
    fclose(f);
    if (p) p[n] = 0;
    *len = n;
    return p;
}

static int render_vars(const char *src, const char *vars_json, const jinja_limits *lim, char **out, e0_err *e) {
    json_t *vars = vars_json ? json_loads(vars_json, 0, NULL) : NULL;
    size_t n;
    int rc = jinja_render(src, strlen(src), vars, lim, out, &n, e);
    json_decref(vars);
    return rc;
}

/* ---- golden cases through the library ---- */

static int list_case_files(char names[][256], int max) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/templates", t_shared());
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        size_t l = strlen(de->d_name);
        if (l > 11 && !strcmp(de->d_name + l - 11, ".cases.json") && l < 200) snprintf(names[n++], 256, "%s", de->d_name);
    }
    closedir(d);
    return n;
}

static int total_golden;

static void golden_file(const char *fname) {
    char path[1024], tpath[1024], tname[200];
    snprintf(path, sizeof path, "%s/templates/%s", t_shared(), fname);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    json_t *cases = json_object_get(root, "cases");
    const char *template = json_string_value(json_object_get(root, "template"));
    snprintf(tpath, sizeof tpath, "%s/templates/%s", t_shared(), template ? template : "?");
    size_t tlen = 0;
    char *tsrc = read_all(tpath, &tlen);
    size_t ncases = json_array_size(cases), pass = 0;
    for (size_t i = 0; tsrc && i < ncases; i++) {
        json_t *c = json_array_get(cases, i);
        const char *want = json_string_value(json_object_get(c, "expected"));
        const char *err = json_string_value(json_object_get(c, "error"));
        char *out = NULL;
        size_t olen = 0;
        e0_err e = {{0}};
        int rc = jinja_render_chat(tsrc, tlen, json_object_get(c, "messages"),
                                   json_is_true(json_object_get(c, "add_generation_prompt")),
                                   json_string_value(json_object_get(c, "bos_token")),
                                   json_string_value(json_object_get(c, "eos_token")), &out, &olen, &e);
        bool ok = want ? rc == 0 && olen == strlen(want) && !memcmp(out, want, olen)
                       : rc != 0 && err && strstr(e.msg, err) != NULL;
        if (!ok)
            printf("  %s case '%s': rc=%d err='%s'\n", fname, json_string_value(json_object_get(c, "name")), rc, e.msg);
        pass += ok;
        free(out);
    }
    char *dot = strstr(fname, ".cases.json");
    snprintf(tname, sizeof tname, "golden %.*s (%zu/%zu)", (int)(dot - fname > 120 ? 120 : dot - fname), fname, pass, ncases);
    t_begin(tname);
    CHECKF(tsrc != NULL, "cannot read %s", tpath);
    CHECKF(ncases > 0, "no cases in %s", path);
    CHECKF(pass == ncases, "%zu of %zu cases differ", ncases - pass, ncases);
    t_end();
    total_golden += (int)ncases;
    free(tsrc);
    json_decref(root);
}

static void test_golden_all(void) {
    static char names[256][256];
    int n = list_case_files(names, 256);
    t_begin("golden files found");
    CHECKF(n >= 40, "only %d case files under %s/templates", n, t_shared());
    t_end();
    for (int i = 0; i < n; i++) golden_file(names[i]);
}

/* ---- golden cases through the CLI ---- */

/* Run the CLI with argv; stdout/stderr into buffers. Returns the exit status. */
static int run_cli(char *const argv[], char **out, size_t *olen, char **err) {
    char ofile[] = "/tmp/test_jinja_outXXXXXX", efile[] = "/tmp/test_jinja_errXXXXXX";
    int ofd = mkstemp(ofile), efd = mkstemp(efile);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(ofd, 1);
        dup2(efd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    close(ofd);
    close(efd);
    size_t elen;
    *out = read_all(ofile, olen);
    *err = read_all(efile, &elen);
    unlink(ofile);
    unlink(efile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void cli_case(const char *file, int idx) {
    char path[1024], tpath[1024], bin[1024], mpath[] = "/tmp/test_jinja_msgXXXXXX";
    snprintf(path, sizeof path, "%s/templates/%s.cases.json", t_shared(), file);
    snprintf(tpath, sizeof tpath, "%s/templates/%s.jinja", t_shared(), file);
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    json_t *root = json_load_file(path, 0, NULL);
    json_t *c = json_array_get(json_object_get(root, "cases"), (size_t)idx);
    CHECKF(c != NULL, "%s case %d missing", file, idx);
    if (!c) { json_decref(root); return; }
    int fd = mkstemp(mpath);
    close(fd);
    json_dump_file(json_object_get(c, "messages"), mpath, 0);
    char *argv[16];
    int k = 0;
    argv[k++] = bin; argv[k++] = "apply-template";
    argv[k++] = "--chat-template-file"; argv[k++] = tpath;
    argv[k++] = "--messages-file"; argv[k++] = mpath;
    argv[k++] = "--bos-token"; argv[k++] = (char *)json_string_value(json_object_get(c, "bos_token"));
    argv[k++] = "--eos-token"; argv[k++] = (char *)json_string_value(json_object_get(c, "eos_token"));
    if (!json_is_true(json_object_get(c, "add_generation_prompt"))) argv[k++] = "--no-generation-prompt";
    argv[k] = NULL;
    char *out, *err;
    size_t olen;
    int rc = run_cli(argv, &out, &olen, &err);
    const char *want = json_string_value(json_object_get(c, "expected"));
    const char *werr = json_string_value(json_object_get(c, "error"));
    if (want) CHECKF(rc == 0 && out && olen == strlen(want) && !memcmp(out, want, olen), "%s case %d: rc=%d stderr=%s", file, idx, rc, err);
    else CHECKF(rc == 1 && err && strstr(err, werr) && !strncmp(err, "edge0-infer: ", 13) && err[strlen(err) - 1] == '\n' &&
                strchr(err, '\n') == err + strlen(err) - 1, "%s case %d: rc=%d stderr=%s", file, idx, rc, err);
    free(out);
    free(err);
    unlink(mpath);
    json_decref(root);
}

static void test_cli_golden(void) {
    cli_case("Qwen3-Coder", 0);
    cli_case("Qwen3-Coder", 3);
    cli_case("google-gemma-4-31B-it", 2);
    cli_case("deepseek-ai-DeepSeek-V3.2", 1);
    cli_case("Kimi-K2-Thinking", 4);
    /* cases whose template raises: exit 1, one line on stderr with the template's message */
    static char names[256][256];
    int n = list_case_files(names, 256), done = 0;
    for (int i = 0; i < n && done < 2; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/templates/%.200s", t_shared(), names[i]);
        json_t *root = json_load_file(path, 0, NULL);
        json_t *cases = json_object_get(root, "cases");
        for (size_t j = 0; j < json_array_size(cases); j++)
            if (json_object_get(json_array_get(cases, j), "error")) {
                char base[256];
                snprintf(base, sizeof base, "%.*s", (int)(strlen(names[i]) - 11), names[i]);
                cli_case(base, (int)j);
                done++;
                break;
            }
        json_decref(root);
    }
    CHECKF(done >= 1, "no error case found");
}

static void test_cli_errors(void) {
    char bin[1024];
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    char tfile[] = "/tmp/test_jinja_tXXXXXX", mfile[] = "/tmp/test_jinja_mXXXXXX";
    int fd = mkstemp(tfile);
    CHECK(write(fd, "{{ messages[0].content }}{{ bos_token }}{% if add_generation_prompt %}G{% endif %}", 82) == 82);
    close(fd);
    fd = mkstemp(mfile);
    const char *bad[] = {"not json", "{\"role\":\"user\"}", "[1]", "[{\"content\":\"x\"}]", "[{\"role\":\"user\",\"content\":\"hi\"}]"};
    for (int i = 0; i < 5; i++) {
        CHECK(ftruncate(fd, 0) == 0);
        CHECK(pwrite(fd, bad[i], strlen(bad[i]), 0) == (ssize_t)strlen(bad[i]));
        char *argv[] = {bin, "apply-template", "--chat-template-file", tfile, "--messages-file", mfile, "--bos-token", "<s>", NULL};
        char *out, *err;
        size_t olen;
        int rc = run_cli(argv, &out, &olen, &err);
        if (i < 4) CHECKF(rc == 1 && olen == 0 && err && !strncmp(err, "edge0-infer: ", 13), "input '%s': rc=%d err=%s", bad[i], rc, err);
        else CHECKF(rc == 0 && olen == 6 && !memcmp(out, "hi<s>G", 6), "rc=%d out=%s err=%s", rc, out, err);
        free(out);
        free(err);
    }
    close(fd);
    const char *const missing[][8] = {
        {"apply-template", "--chat-template-file", "/nonexistent/x.jinja", "--messages-file", mfile, NULL},
        {"apply-template", "--messages-file", mfile, NULL},
        {"apply-template", "--chat-template-file", tfile, NULL},
        {"apply-template", "--bogus", NULL},
        {"apply-template", "--chat-template-file", NULL},
    };
    for (int i = 0; i < 5; i++) {
        char *argv[10] = {bin};
        for (int k = 0; missing[i][k]; k++) argv[k + 1] = (char *)missing[i][k];
        char *out, *err;
        size_t olen;
        int rc = run_cli(argv, &out, &olen, &err);
        CHECKF(rc == 1 && err && strstr(err, "edge0-infer: "), "case %d: rc=%d err=%s", i, rc, err);
        free(out);
        free(err);
    }
    char *argv[] = {bin, "apply-template", "--help", NULL};
    char *out, *err;
    size_t olen;
    CHECK(run_cli(argv, &out, &olen, &err) == 0 && out && strstr(out, "--chat-template-file"));
    free(out);
    free(err);
    unlink(tfile);
    unlink(mfile);
}

/* ---- unit cases ---- */

static void test_unit_cases(void) {
    size_t n = sizeof UNIT_CASES / sizeof UNIT_CASES[0];
    for (size_t i = 0; i < n; i++) {
        char *out = NULL;
        e0_err e = {{0}};
        int rc = render_vars(UNIT_CASES[i].src, UNIT_VARS, NULL, &out, &e);
        CHECKF(rc == 0 && !strcmp(out, UNIT_CASES[i].expected), "case %zu: %s\n    got:  %s\n    want: %s", i, UNIT_CASES[i].src,
               rc ? e.msg : out, UNIT_CASES[i].expected);
        free(out);
    }
}

static void test_unit_errors(void) {
    size_t n = sizeof UNIT_ERRORS / sizeof UNIT_ERRORS[0];
    for (size_t i = 0; i < n; i++) {
        char *out = NULL;
        e0_err e = {{0}};
        int rc = render_vars(UNIT_ERRORS[i].src, UNIT_VARS, NULL, &out, &e);
        CHECKF(rc == -1 && out == NULL && strstr(e.msg, UNIT_ERRORS[i].msg), "%s: rc=%d msg='%s'", UNIT_ERRORS[i].src, rc, e.msg);
        free(out);
    }
}

/* Errors that name the construct and the line. */
static void expect_error(const char *src, const char *msg, const jinja_limits *lim) {
    char *out = NULL;
    e0_err e = {{0}};
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    int rc = render_vars(src, "{\"messages\": []}", lim, &out, &e);
    double dt = (double)clock() / CLOCKS_PER_SEC - t0;
    CHECKF(rc == -1 && out == NULL && strstr(e.msg, msg), "%.60s: rc=%d msg='%s' (want '%s')", src, rc, e.msg, msg);
    CHECKF(dt < 60, "%.60s took %.1f s", src, dt);
    free(out);
}

static void test_unsupported_and_syntax(void) {
    expect_error("a\n{{ x | xyz }}", "unsupported filter 'xyz' at line 2", NULL);
    expect_error("{{ 1 is frobnicated }}", "unsupported test 'frobnicated' at line 1", NULL);
    expect_error("\n\n{% include 'x.jinja' %}", "unsupported tag 'include' at line 3", NULL);
    expect_error("{% import 'x' as y %}", "unsupported tag 'import'", NULL);
    expect_error("{% extends 'base' %}", "unsupported tag 'extends'", NULL);
    expect_error("{% for x in y recursive %}{% endfor %}", "unsupported construct 'recursive'", NULL);
    expect_error("{{ cycler() }}", "'cycler' is undefined", NULL);
    expect_error("{{ '%x' % 1 }}", "unsupported construct: '%x'", NULL);
    expect_error("{{ '%s %s' % (1,) }}", "not enough arguments", NULL);
    expect_error("{% break %}", "'break' outside of a loop", NULL);
    expect_error("{% for i in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", "'continue' outside of a loop", NULL);
    expect_error("{% with x %}{% endwith %}", "syntax error", NULL);
    expect_error("{% if true %}never closed", "missing {% endif %}", NULL);
    expect_error("{% for x in y %}", "missing {% endfor %}", NULL);
    expect_error("{% endif %}", "unexpected tag 'endif'", NULL);
    expect_error("{{ 1 + }}", "syntax error", NULL);
    expect_error("{{ (1 }}", "unclosed", NULL);
    expect_error("{{ (1 ]] }}", "syntax error", NULL);
    expect_error("{{ 'abc }}", "unterminated string", NULL);
    expect_error("{# no end", "missing end of comment", NULL);
    expect_error("{{ x", "unclosed", NULL);
    expect_error("{% raw %}no end", "endraw", NULL);
    expect_error("{{ 99999999999999999999 }}", "too large", NULL);
    expect_error("\xff\xfe{{ 1 }}", "not valid UTF-8", NULL);
    expect_error("{% set a, b = [1, 2, 3] %}", "too many values to unpack", NULL);
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", "non-namespace", NULL);
    expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow", NULL);
    expect_error("{{ 2 ** 100 }}", "integer overflow", NULL);
}

static void test_none_attribute_is_undefined(void) {
    char *out = NULL;
    e0_err e = {{0}};
    CHECK(render_vars("[{{ none.x }}{{ (none).y is defined }}]", NULL, NULL, &out, &e) == 0 && !strcmp(out, "[False]"));
    free(out);
}

/* ---- hostile templates ---- */

static void test_runaway_loops(void) {
    expect_error("{% for i in range(1000000000) %}{% for j in range(1000000000) %}{% endfor %}{% endfor %}",
                 "evaluation steps", NULL);
    expect_error("{% for i in range(10**9) if i < 0 %}{% endfor %}", "evaluation steps", NULL);
    expect_error("{{ range(10**9)|list|length }}", "evaluation steps", NULL);
    jinja_limits small = {.max_steps = 1000};
    expect_error("{% for i in range(100) %}{% for j in range(100) %}{{ i }}{% endfor %}{% endfor %}", "1000 evaluation steps", &small);
}

static void test_huge_output(void) {
    expect_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output exceeds", NULL);
    expect_error("{{ 'x' * 10**12 }}", "too large", NULL);
    expect_error("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "exceeds", NULL);
    expect_error("{{ [1] * 10**9 }}", "too large", NULL);
    jinja_limits small = {.max_output = 100};
    expect_error("{% for i in range(1000) %}{{ i }}{% endfor %}", "output exceeds 100 bytes", &small);
    jinja_limits mem = {.max_memory = 1 << 20};
    expect_error("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}", "memory", &mem);
}

static char *repeat_str(const char *a, int n, const char *mid, const char *b) {
    size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
    char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *p = s;
    for (int i = 0; i < n; i++) { memcpy(p, a, la); p += la; }
    memcpy(p, mid, lm);
    p += lm;
    for (int i = 0; i < n; i++) { memcpy(p, b, lb); p += lb; }
    *p = 0;
    return s;
}

static void test_deep_nesting(void) {
    char *s = repeat_str("{% if true %}", 5000, "x", "{% endif %}");
    expect_error(s, "nested too deeply", NULL);
    free(s);
    s = repeat_str("(", 100000, "1", ")");
    char *t = malloc(strlen(s) + 8);
    sprintf(t, "{{ %s }}", s);
    expect_error(t, "nested too deeply", NULL);
    free(s);
    free(t);
    s = repeat_str("[", 100000, "", "]");
    t = malloc(strlen(s) + 8);
    sprintf(t, "{{ %s }}", s);
    expect_error(t, "nested too deeply", NULL);
    free(s);
    free(t);
    s = repeat_str("not ", 100000, "1", "");
    t = malloc(strlen(s) + 8);
    sprintf(t, "{{ %s }}", s);
    expect_error(t, "nested too deeply", NULL);
    free(s);
    free(t);
    s = repeat_str("-", 100000, "1", "");
    t = malloc(strlen(s) + 8);
    sprintf(t, "{{ %s }}", s);
    expect_error(t, "nested too deeply", NULL);
    free(s);
    free(t);
    /* moderate nesting is fine */
    char *out = NULL;
    e0_err e = {{0}};
    s = repeat_str("{% if true %}", 50, "ok", "{% endif %}");
    CHECKF(render_vars(s, NULL, NULL, &out, &e) == 0 && !strcmp(out, "ok"), "%s", e.msg);
    free(out);
    free(s);
    /* deeply nested input data */
    char *js = repeat_str("[", 100000, "", "]");
    json_error_t je;
    json_t *deep = json_loads(js, 0, &je); /* jansson itself refuses very deep input */
    if (deep) {
        json_t *vars = json_pack("{s:o}", "x", deep);
        size_t n;
        CHECK(jinja_render("{{ x }}", 7, vars, NULL, &out, &n, &e) == -1);
        json_decref(vars);
    }
    free(js);
}

static void test_macro_recursion(void) {
    expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nested too deeply", NULL);
    expect_error("{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}", "nested too deeply", NULL);
    expect_error("{% macro f(n) %}{{ f(n) ~ f(n) }}{% endmacro %}{{ f(1) }}", "nested too deeply", NULL);
    /* exponential fan-out with shallow depth hits the step bound */
    char *out = NULL;
    e0_err e = {{0}};
    int rc = render_vars("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}", NULL, NULL, &out, &e);
    CHECKF(rc == -1 && (strstr(e.msg, "evaluation steps") || strstr(e.msg, "bytes of memory")), "rc=%d msg=%s", rc, e.msg);
    free(out);
}

/* Truncations and byte mutations of real templates: any result is fine, but no crash/hang. */
static void test_mutated_templates(void) {
    static char names[256][256];
    int n = list_case_files(names, 256);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int renders = 0, errors = 0;
    json_t *msgs = json_loads("[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"},"
                              "{\"role\":\"assistant\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"u2\"}]", 0, NULL);
    for (int f = 0; f < n; f += 3) {
        char path[1024], base[256];
        snprintf(base, sizeof base, "%.200s", names[f]);
        base[strlen(base) - 11] = 0; /* drop ".cases.json" */
        snprintf(path, sizeof path, "%s/templates/%s.jinja", t_shared(), base);
        size_t len;
        char *src = read_all(path, &len);
        if (!src || !len) { free(src); continue; }
        char *m = malloc(len + 1);
        for (int k = 0; k < 12; k++) {
            memcpy(m, src, len + 1);
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            size_t pos = rng % len, mlen = len;
            static const char junk[] = "{}%#-+()[]|'\".,~*/ \n\x80\xc3";
            if (k % 3 == 0) mlen = pos; /* truncate */
            else for (int j = 0; j < 3; j++) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; m[(pos + j * 7) % len] = junk[rng % (sizeof junk - 1)]; }
            char *out = NULL;
            size_t olen;
            e0_err e = {{0}};
            int rc = jinja_render_chat(m, mlen, msgs, true, "<s>", "</s>", &out, &olen, &e);
            renders++;
            if (rc) { errors++; CHECKF(e.msg[0] != 0, "error without message"); }
            free(out);
        }
        free(m);
        free(src);
    }
    json_decref(msgs);
    CHECKF(renders > 100, "only %d renders", renders);
    printf("  # %d mutated renders, %d errors\n", renders, errors);
}

static void test_api_validation(void) {
    char *out = NULL;
    size_t n;
    e0_err e = {{0}};
    json_t *bad = json_loads("{\"a\":1}", 0, NULL);
    CHECK(jinja_render_chat("x", 1, bad, true, NULL, NULL, &out, &n, &e) == -1 && out == NULL && strstr(e.msg, "array"));
    json_decref(bad);
    bad = json_loads("[{\"role\":1}]", 0, NULL);
    CHECK(jinja_render_chat("x", 1, bad, true, NULL, NULL, &out, &n, &e) == -1 && strstr(e.msg, "role"));
    json_decref(bad);
    bad = json_loads("[]", 0, NULL);
    CHECK(jinja_render("x", 1, bad, NULL, &out, &n, &e) == -1 && strstr(e.msg, "object"));
    CHECK(jinja_render_chat("{{ bos_token }}{{ messages|length }}", 36, bad, true, NULL, "e", &out, &n, &e) == 0 && !strcmp(out, "0"));
    free(out);
    /* output may contain NUL bytes; length says how many */
    CHECK(jinja_render("a{{ '\\x00' }}b", 14, NULL, NULL, &out, &n, &e) == 0 && n == 3 && out[1] == 0 && out[2] == 'b');
    free(out);
    /* an empty template renders to "" */
    CHECK(jinja_render("", 0, NULL, NULL, &out, &n, &e) == 0 && n == 0 && out && out[0] == 0);
    free(out);
    json_decref(bad);
}

/* --model: the template and BOS/EOS texts come from a GGUF's tokenizer metadata. */
static bool write_model(const char *path, const char *tmpl) {
    e0_err e;
    gguf_writer *w = gguf_writer_open(path, &e);
    if (!w) return false;
    const char *toks[] = {"<unk>", "<s>", "</s>"};
    if (tmpl) gguf_writer_kv_str(w, "tokenizer.chat_template", tmpl);
    gguf_writer_kv_str_arr(w, "tokenizer.ggml.tokens", toks, 3);
    gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", 2);
    return gguf_writer_close(w, &e) == 0;
}

static void test_cli_model(void) {
    char bin[1024], model[] = "/tmp/test_jinja_modelXXXXXX", mfile[] = "/tmp/test_jinja_mXXXXXX";
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    close(mkstemp(model));
    int fd = mkstemp(mfile);
    const char *msgs = "[{\"role\":\"user\",\"content\":\"hi\"}]";
    CHECK(write(fd, msgs, strlen(msgs)) == (ssize_t)strlen(msgs));
    close(fd);
    CHECK(write_model(model, "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"
                             "{% if add_generation_prompt %}[assistant]{% endif %}"));
    char *out, *err;
    size_t olen;
    char *argv[] = {bin, "apply-template", "--model", model, "--messages-file", mfile, NULL};
    int rc = run_cli(argv, &out, &olen, &err);
    CHECKF(rc == 0 && out && !strcmp(out, "<s>[user]hi</s>[assistant]"), "rc=%d out=%s err=%s", rc, out, err);
    free(out);
    free(err);
    char *argv2[] = {bin, "apply-template", "--model", model, "--messages-file", mfile, "--no-generation-prompt", "--bos-token", "B", NULL};
    rc = run_cli(argv2, &out, &olen, &err);
    CHECKF(rc == 0 && out && !strcmp(out, "B[user]hi</s>"), "rc=%d out=%s err=%s", rc, out, err);
    free(out);
    free(err);
    CHECK(write_model(model, NULL));
    rc = run_cli(argv, &out, &olen, &err);
    CHECKF(rc == 1 && olen == 0 && err && strstr(err, "no chat template"), "rc=%d err=%s", rc, err);
    free(out);
    free(err);
    char *argv3[] = {bin, "apply-template", "--model", "/nonexistent.gguf", "--messages-file", mfile, NULL};
    rc = run_cli(argv3, &out, &olen, &err);
    CHECKF(rc == 1 && err && !strncmp(err, "edge0-infer: ", 13), "rc=%d err=%s", rc, err);
    free(out);
    free(err);
    unlink(model);
    unlink(mfile);
}

int main(void) {
    RUN(test_unit_cases);
    RUN(test_unit_errors);
    RUN(test_unsupported_and_syntax);
    RUN(test_none_attribute_is_undefined);
    RUN(test_api_validation);
    RUN(test_runaway_loops);
    RUN(test_huge_output);
    RUN(test_deep_nesting);
    RUN(test_macro_recursion);
    if (t_need_shared("templates", NULL)) {
        RUN(test_mutated_templates);
        test_golden_all();
        t_begin("golden cases total");
        CHECKF(total_golden >= 300, "only %d golden cases", total_golden);
        t_end();
        RUN(test_cli_golden);
    }
    RUN(test_cli_errors);
    RUN(test_cli_model);
    return T_DONE();
}
