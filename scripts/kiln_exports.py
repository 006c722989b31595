#!/usr/bin/env python3
"""scripts/kiln_exports.py: libkiln's export list, derived from include/kiln/.

The public headers are the only statement of what libkiln offers, so the
names libkiln exports are read off them rather than kept in a second list:
the headers are run through the C preprocessor and every function or
variable declared at file scope in include/kiln/*.h (static inline helpers
and typedefs excluded) is a public symbol.

  kiln_exports.py visibility CC INCDIR OUT   header that gives those
        declarations default visibility; the libraries that make up libkiln
        are compiled with -fvisibility=hidden and force-include it
  kiln_exports.py version-script CC INCDIR OUT   GNU ld version script:
        the public names global, everything else local
  kiln_exports.py check CC INCDIR NM LIB [INSTALLED...]   fails unless
        `nm -D --defined-only LIB` lists exactly the public names, and (when
        INSTALLED headers are given) every include/kiln/*.h is installed

CC is the compiler command (several words allowed, as one argument).
"""
import glob
import os
import re
import shlex
import subprocess
import sys

# Symbols that the static linker itself may define in any shared object.
LINKER_SYMBOLS = {'_init', '_fini', '_edata', '_end', '__bss_start'}

TOKEN = re.compile(r'''
    (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*)
  | (?P<punct>\.\.\.|->|[][(){};,=*&.<>+\-/%!~?:|^#])
  | (?P<space>\s+)
''', re.X)

SKIP_WORDS = {'__extension__', '__inline', '__inline__', '__restrict', 'restrict'}


def public_headers(incdir):
    return sorted(glob.glob(os.path.join(incdir, 'kiln', '*.h')))


def preprocess(cc, incdir):
    """(file, text) chunks of the preprocessed public headers."""
    src = ''.join('#include "kiln/%s"\n' % os.path.basename(h) for h in public_headers(incdir))
    cmd = shlex.split(cc) + ['-E', '-D_GNU_SOURCE', '-I', incdir, '-x', 'c', '-']
    out = subprocess.run(cmd, input=src, capture_output=True, text=True, check=True).stdout
    chunks, cur = [], None
    marker = re.compile(r'^#\s*(?:line\s+)?\d+\s+"([^"]*)"')
    for line in out.splitlines():
        m = marker.match(line)
        if m:
            cur = m.group(1)
            continue
        if line.startswith('#'):  # pragmas left in the output
            continue
        chunks.append((cur, line))
    return chunks


def tokens(chunks):
    for f, line in chunks:
        pos = 0
        while pos < len(line):
            m = TOKEN.match(line, pos)
            if not m:
                raise SystemExit('kiln_exports: cannot tokenize %r in %s' % (line[pos:], f))
            pos = m.end()
            if m.lastgroup != 'space':
                yield f, m.group(m.lastgroup)


def statements(chunks):
    """Top-level declarations as (file of first token, token list); bodies
    of functions defined in headers are dropped with their statement."""
    stmt, depth, stmt_file = [], 0, None
    for f, t in tokens(chunks):
        if not stmt:
            stmt_file = f
        if t in '([{':
            if t == '{' and depth == 0 and stmt and stmt[-1] == ')':
                # a function definition (static inline): skip to its end
                stmt.append('{BODY}')
            depth += 1
            stmt.append(t)
            continue
        if t in ')]}':
            depth -= 1
            stmt.append(t)
            if t == '}' and depth == 0 and '{BODY}' in stmt:
                yield stmt_file, stmt
                stmt = []
            continue
        if t == ';' and depth == 0:
            yield stmt_file, stmt
            stmt = []
            continue
        stmt.append(t)


def strip_attributes(stmt):
    out, i = [], 0
    while i < len(stmt):
        t = stmt[i]
        if t in ('__attribute__', '__asm__', '__asm', '__declspec') and i + 1 < len(stmt) \
                and stmt[i + 1] == '(':
            depth, i = 0, i + 1
            while True:
                if stmt[i] == '(':
                    depth += 1
                elif stmt[i] == ')':
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        if t not in SKIP_WORDS:
            out.append(t)
        i += 1
    return out


def split_top(stmt, sep):
    parts, cur, depth = [], [], 0
    for t in stmt:
        if t in '([{':
            depth += 1
        elif t in ')]}':
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


def is_id(t):
    return re.match(r'[A-Za-z_]', t) is not None


def declarator_name(decl):
    """The name a declarator declares: `f (args)`, `(*p)(args)`, `v[3]`, `v = x`."""
    depth = 0
    for i, t in enumerate(decl):
        if t == '=' and depth == 0:
            decl = decl[:i]
            break
        if t in '([{':
            depth += 1
        elif t in ')]}':
            depth -= 1
    for i, t in enumerate(decl):
        if t == '(':
            if i + 1 < len(decl) and decl[i + 1] == '*':  # pointer to function
                j = i + 1
                while decl[j] in ('*', 'const', 'volatile'):
                    j += 1
                return decl[j], False
            if i > 0 and is_id(decl[i - 1]):
                return decl[i - 1], True
    names = [t for t in decl if is_id(t)]
    if '[' in decl:
        names = [t for t in decl[:decl.index('[')] if is_id(t)]
    return (names[-1] if names else None), False


def public_names(cc, incdir):
    """{name: 'function' | 'variable'} of the public headers."""
    incdir = os.path.abspath(incdir)
    pubdir = os.path.join(incdir, 'kiln') + os.sep
    names = {}
    for f, stmt in statements(preprocess(cc, incdir)):
        if not f or not os.path.abspath(f).startswith(pubdir):
            continue
        stmt = strip_attributes(stmt)
        if not stmt or stmt[0] == 'typedef' or 'static' in stmt or '{BODY}' in stmt:
            continue
        # drop struct/union/enum bodies: `struct x { ... } v;` declares v
        flat, depth = [], 0
        for t in stmt:
            if t == '{':
                depth += 1
            elif t == '}':
                depth -= 1
            elif depth == 0:
                flat.append(t)
        if flat[:1] in (['struct'], ['union'], ['enum']) and len(flat) <= 2:
            continue  # a tag declaration or definition only
        head_end = 0
        for i, t in enumerate(flat):  # type specifiers end at the first declarator
            if t in ('(', '*') or t == ',' or t == '=' or t == '[':
                break
            head_end = i
        decls = split_top(flat, ',')
        for k, d in enumerate(decls):
            if k > 0:  # later declarators share the first one's type
                d = flat[:head_end] + d
            name, is_func = declarator_name(d)
            if not name:
                continue
            if not is_func and 'extern' not in flat:
                raise SystemExit('kiln_exports: %s: "%s" is defined in a public header; '
                                 'declare it extern there' % (f, name))
            names[name] = 'function' if is_func else 'variable'
    return names


def exported(nm, lib):
    out = subprocess.run(shlex.split(nm) + ['-D', '--defined-only', lib], capture_output=True,
                         text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        if kind == 'A':  # version node names
            continue
        syms.add(name.split('@')[0])
    return syms


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    mode, cc, incdir = argv[1], argv[2], argv[3]
    names = public_names(cc, incdir)
    if not names:
        raise SystemExit('kiln_exports: found no declarations under %s/kiln' % incdir)
    if mode == 'visibility':
        lines = ['/* Generated by scripts/kiln_exports.py: force-included into the libraries',
                 ' * that make up libkiln (compiled with -fvisibility=hidden), so that',
                 ' * exactly the declarations of include/kiln/ have default visibility. */',
                 '#pragma GCC visibility push(default)']
        lines += ['#include "kiln/%s"' % os.path.basename(h) for h in public_headers(incdir)]
        lines += ['#pragma GCC visibility pop', '']
        with open(argv[4], 'w') as f:
            f.write('\n'.join(lines))
    elif mode == 'version-script':
        with open(argv[4], 'w') as f:
            f.write('/* Generated by scripts/kiln_exports.py from include/kiln/*.h. */\n{\n'
                    '  global:\n')
            f.writelines('    %s;\n' % n for n in sorted(names))
            f.write('  local:\n    *;\n};\n')
    elif mode == 'check':
        nm, lib, installed = argv[4], argv[5], argv[6:]
        syms = exported(nm, lib)
        extra = sorted(syms - set(names) - LINKER_SYMBOLS)
        missing = sorted(set(names) - syms)
        bad = 0
        if extra:
            bad = 1
            print('%s exports %d symbol(s) that no header in %s/kiln declares:' %
                  (lib, len(extra), incdir))
            for s in extra:
                print('  ' + s)
        if missing:
            bad = 1
            print('%d public declaration(s) are not exported by %s:' % (len(missing), lib))
            for s in missing:
                print('  %s (%s)' % (s, names[s]))
        if installed:
            inst = {os.path.basename(h) for h in installed}
            loose = [os.path.basename(h) for h in public_headers(incdir)
                     if os.path.basename(h) not in inst]
            if loose:
                bad = 1
                print('public headers not installed (add them to kiln_public_headers): ' +
                      ', '.join(loose))
        if not bad:
            print('%s exports exactly the %d names declared in %s/kiln' %
                  (lib, len(names), incdir))
        return bad
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
