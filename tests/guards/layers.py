#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of lib/, and those of softrdma/ when it is built, hold: each
layer's sources compile with its own include path (compile_commands.json),
and with that path an #include of a header of the layers below it compiles
while one of a layer above or beside it is an error (the header is not
found). Every pair of layers is tried both ways, so a layer whose path
reached too far, or not far enough, fails here.

Then the same order at link time: of the symbols a layer's static library
leaves undefined (nm -u), every one that another layer of the tree defines
must be defined by a layer below it, so no layer calls up through a
declaration of its own either.

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

# softrdma's folders (softrdma/meson.build, each folder's layer_uses).
SOFTRDMA_BELOW = {
    'base': [],
    'wire': ['base'],
    'capture': ['base', 'wire'],
    'verbs': ['base', 'wire', 'capture'],
    'cm': ['base', 'wire', 'capture', 'verbs'],
}

# (folder, static library prefix, layers, required)
TREES = [
    ('lib', 'librpcrdma', BELOW, True),
    ('softrdma', 'libsoftrdma', SOFTRDMA_BELOW, False),
]


def layer_command(commands, prefix, layer):
    """The compile command of one source of @layer's static library, as words, or None."""
    target = '%s-%s.a.p' % (prefix, layer)
    for entry in commands:
        if target in entry['output'].split('/'):
            return entry['directory'], shlex.split(entry['command'])
    return None


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


def check_tree(commands, root, folder, prefix, below_of, tmp):
    """Try every pair of @folder's layers; returns (tried, wrong), or None if it is not built."""
    top = os.path.join(os.path.realpath(root), folder)
    cmds = {layer: layer_command(commands, prefix, layer) for layer in below_of}
    if not any(cmds.values()):
        return None
    headers = {}
    for layer in below_of:
        if not cmds[layer]:
            sys.exit('layers: no compile command for %s/%s in compile_commands.json'
                     % (folder, layer))
        hs = sorted(h for h in os.listdir(os.path.join(top, layer)) if h.endswith('.h'))
        if not hs:
            sys.exit('layers: %s/%s has no header to include' % (folder, layer))
        headers[layer] = hs
    bad = 0
    tried = 0
    for layer, below in below_of.items():
        directory, words = cmds[layer]
        for other, hs in headers.items():
            allowed = other == layer or other in below
            for h in hs:
                rc, err = probe(directory, words, h, tmp)
                tried += 1
                if allowed and rc != 0:
                    print('%s/%s cannot include %s/%s:\n%s' % (folder, layer, other, h, err))
                    bad += 1
                elif not allowed and (rc == 0 or not missing(err, h)):
                    print('%s/%s can include %s/%s (%s)' % (folder, layer, other, h,
                          'compiled' if rc == 0 else err.strip()))
                    bad += 1
    return tried, bad


def nm_symbols(archive, undefined):
    """The global symbols @archive leaves undefined, or those it defines."""
    run = subprocess.run(['nm', '-u' if undefined else '--defined-only', archive],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit('layers: nm %s: %s' % (archive, run.stderr.strip()))
    names = set()
    for line in run.stdout.splitlines():
        w = line.split()
        if undefined and len(w) == 2 and w[0] == 'U':
            names.add(w[1])
        elif not undefined and len(w) == 3 and w[1] in 'TDBRGSVW':
            names.add(w[2])
    return names


def check_links(build, folder, prefix, below_of):
    """Every symbol a layer takes from another layer comes from below; returns (arrows, wrong)."""
    def archive(layer):
        return os.path.join(build, folder, '%s-%s.a' % (prefix, layer))
    defined = {layer: nm_symbols(archive(layer), False) for layer in below_of}
    arrows = 0
    bad = 0
    for layer, below in below_of.items():
        wanted = nm_symbols(archive(layer), True)
        for other in below_of:
            taken = wanted & defined[other] if other != layer else set()
            if not taken:
                continue
            arrows += 1
            if other not in below:
                print('%s/%s takes %s from %s/' % (folder, layer,
                      ', '.join(sorted(taken)), other))
                bad += 1
    return arrows, bad


def main():
    build, root = sys.argv[1], sys.argv[2]
    with open(os.path.join(build, 'compile_commands.json')) as f:
        commands = json.load(f)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for folder, prefix, below_of, required in TREES:
            result = check_tree(commands, root, folder, prefix, below_of, tmp)
            if result is None:
                if required:
                    sys.exit('layers: no compile command for %s/ in compile_commands.json'
                             % folder)
                print('%s/: not built' % folder)
                continue
            tried, wrong = result
            print('%s/: %d includes tried, %d wrong' % (folder, tried, wrong))
            arrows, up = check_links(build, folder, prefix, below_of)
            print('%s/: %d layer-to-layer symbol arrows, %d pointing up or beside' %
                  (folder, arrows, up))
            bad += wrong + up
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
