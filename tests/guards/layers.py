#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of lib/ hold: each layer's sources compile with its own
include path (compile_commands.json), and with that path an #include of a
header of the layers below it compiles while one of a layer above or beside
it is an error (the header is not found). Every pair of layers is tried both ways, so
a layer whose path reached too far, or not far enough, fails here.

Usage: layers.py BUILD_DIR SOURCE_ROOT
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

# Lowest first; a layer may include its own headers and those of the layers
# it lists (lib/meson.build says the same in words).
BELOW = {
    'base': [],
    'proto': ['base'],
    'core': ['base', 'proto'],
    'xprtrdma': ['base', 'proto', 'core'],
    'svcrdma': ['base', 'proto', 'core'],
    'compat': ['base', 'proto', 'core', 'xprtrdma', 'svcrdma'],
    'tirpc': ['base', 'proto', 'core', 'xprtrdma', 'svcrdma', 'compat'],
}


def layer_command(commands, layer):
    """The compile command of one source of @layer's static library, as words."""
    target = 'librpcrdma-%s.a.p' % layer
    for entry in commands:
        if target in entry['output'].split('/'):
            return entry['directory'], shlex.split(entry['command'])
    sys.exit('layers: no compile command for lib/%s in compile_commands.json' % layer)


def probe(directory, words, header, tmp):
    """Compile a file holding only #include "@header" with @words' flags."""
    src = os.path.join(tmp, 'probe.c')
    with open(src, 'w') as f:
        f.write('#include "%s"\nint layers_probe;\n' % header)
    argv = [words[0]]
    skip = False
    for w in words[1:]:
        if skip:
            skip = False
            continue
        if w in ('-o', '-MF', '-MQ', '-c'):
            skip = w != '-c'
            continue
        if w.endswith('.c'):
            continue
        argv.append(w)
    argv += ['-fdiagnostics-color=never', '-fsyntax-only', src]
    run = subprocess.run(argv, cwd=directory, capture_output=True, text=True, timeout=120)
    return run.returncode, run.stderr


def missing(err, header):
    """Whether @err says @header was not found (gcc: "No such file or
    directory", clang: "file not found"), not that it failed otherwise."""
    return header in err and ('No such file' in err or 'file not found' in err)


def main():
    build, root = sys.argv[1], sys.argv[2]
    lib = os.path.join(os.path.realpath(root), 'lib')
    with open(os.path.join(build, 'compile_commands.json')) as f:
        commands = json.load(f)
    headers = {}
    for layer in BELOW:
        hs = sorted(h for h in os.listdir(os.path.join(lib, layer)) if h.endswith('.h'))
        if not hs:
            sys.exit('layers: lib/%s has no header to include' % layer)
        headers[layer] = hs
    bad = 0
    tried = 0
    with tempfile.TemporaryDirectory() as tmp:
        for layer, below in BELOW.items():
            directory, words = layer_command(commands, layer)
            for other, hs in headers.items():
                allowed = other == layer or other in below
                for h in hs:
                    rc, err = probe(directory, words, h, tmp)
                    tried += 1
                    if allowed and rc != 0:
                        print('lib/%s cannot include %s/%s:\n%s' % (layer, other, h, err))
                        bad += 1
                    elif not allowed and (rc == 0 or not missing(err, h)):
                        print('lib/%s can include %s/%s (%s)' % (layer, other, h,
                              'compiled' if rc == 0 else err.strip()))
                        bad += 1
    print('%d includes tried, %d wrong' % (tried, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
