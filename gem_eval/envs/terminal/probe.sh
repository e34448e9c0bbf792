# gem-eval's toolchain probe (gem_eval/envs/terminal/toolchain.py): run by `sh` as root in
# the pristine container, after NAMES, PROGRAMS, FILES and OUT are set; writes
# `<kind> <value>` lines to $OUT (see toolchain.parse).
exec > "$OUT"
say() { printf '%s %s\n' "$1" "$2"; }
printf '@environ\n'; tr '\000' '\n' < /proc/$$/environ; printf '\n@end\n'
seen=" "
hops() {  # a path, every symlink on the way to its target, and the target
  local p n t
  p=$1; n=0
  while [ -L "$p" ] && [ $n -lt 40 ]; do
    say sealed "$p"; t=$(readlink "$p")
    case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
    n=$((n + 1))
  done
  say sealed "$p"
  t=$(readlink -f "$1" 2>/dev/null) && say sealed "$t"
}
libraries() {  # `<soname> <path>` of each library an executable loads, and its loader
  command -v ldd >/dev/null 2>&1 || return 0
  ldd "$1" 2>/dev/null | while read -r a b c d; do
    case $a in /*) printf 'loader %s\n' "$(readlink -f "$a")" ;; esac
    case $c in /*) printf '%s %s\n' "$a" "$(readlink -f "$c")" ;; esac
  done
}
examine() {  # an executable: its links, its interpreter if a script, its libraries
  local real interp lib name
  case $seen in *" $1 "*) return 0 ;; esac
  seen="$seen$1 "
  hops "$1"
  real=$(readlink -f "$1" 2>/dev/null) || real=$1
  case ${real##*/} in python*) pythons="$pythons $real" ;; esac
  if [ "$(head -c 2 "$real" 2>/dev/null)" = "#!" ]; then
    set -- $(head -n 1 "$real" | cut -c 3-)
    interp=${1:-}
    if [ "${interp##*/}" = env ] && [ -n "${2:-}" ]; then
      interp=$(command -v "$2" 2>/dev/null) || interp=""
    fi
    case $interp in /*) examine "$interp" ;; esac
  fi
  libraries "$real" | while read -r name lib; do hops "$lib"; done
  # which file the loader finds for each library, asked again before the tests (an
  # ldconfig must not have put another first)
  command -v ldd >/dev/null 2>&1 && ldd "$real" 2>/dev/null | while read -r a b c d; do
    case $c in /*) say links "$real $a $c" ;; esac
  done
}
resolve() {  # a command name: where it would appear on PATH, and where it is
  local d r found ifs
  ifs=$IFS; IFS=:
  for d in $PATH; do
    [ -n "$d" ] || continue
    say sealed "$d/$1"
    r=$(readlink -f "$d" 2>/dev/null) && say sealed "$r/$1"
  done
  IFS=$ifs
  found=$(command -v "$1" 2>/dev/null) || return 0
  case $found in /*) ;; *) return 0 ;; esac
  say tool "$1=$found"
  examine "$found"
}
pythons=""
for name in $NAMES; do resolve "$name"; done
for p in $PROGRAMS; do [ -f "$p" ] && [ -x "$p" ] && examine "$p"; done
for p in $FILES; do hops "$p"; done
uv_cache=${UV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/uv}
uv_python=${UV_PYTHON_INSTALL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/uv/python}
[ -e "$uv_cache" ] && say cache "UV_CACHE_DIR=$uv_cache" && say sealed "$uv_cache"
[ -e "$uv_python" ] && say cache "UV_PYTHON_INSTALL_DIR=$uv_python" && say sealed "$uv_python"
# The audit's own tools: GNU find (for -fprintf) and timeout, with what they load.
finder=$(command -v find 2>/dev/null) && finder=$(readlink -f "$finder")
stopper=$(command -v timeout 2>/dev/null) && stopper=$(readlink -f "$stopper")
if [ -n "$finder" ] && [ -n "$stopper" ] && command -v sha256sum >/dev/null 2>&1 \
   && command -v ldd >/dev/null 2>&1 && find / -maxdepth 0 -fprintf /dev/null '' 2>/dev/null
then
  { printf 'program find %s\nprogram timeout %s\n' "$finder" "$stopper"
    libraries "$finder"; libraries "$stopper"; } | sort -u | while read -r kind path; do
    [ "$kind" = program ] && set -- $path && kind=$1 && path=$2
    say checker "$kind $(sha256sum "$path" | cut -d' ' -f1) $path"
  done
fi
[ -e /etc/ld.so.preload ] && say preload "$(sha256sum /etc/ld.so.preload | cut -d' ' -f1)"
# The loader's cache and configuration: an ldconfig is ordinary work (apt runs it); what
# the tests then load is traced. Listed, so the record says what changed.
for p in /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d; do say noted "$p"; done
# What makes iconv load modules by name.
for d in /usr/lib/*/gconv /usr/lib/gconv /usr/lib64/gconv; do
  [ -d "$d" ] || continue
  for p in "$d/gconv-modules" "$d/gconv-modules.d" "$d/gconv-modules.cache"; do say sealed "$p"; done
done
# What the image runs and loads by name: a new file of one of these names takes its place.
ifs=$IFS; IFS=:
for d in $PATH; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do [ -e "$f" ] || [ -L "$f" ] && say program "${f##*/}"; done
done
IFS=$ifs
for d in /lib /lib64 /usr/lib /usr/lib64 /usr/local/lib /lib/*-linux-* /usr/lib/*-linux-* \
         /usr/local/lib/*-linux-*; do
  [ -d "$d" ] || continue
  for f in "$d"/*.so "$d"/*.so.*; do [ -e "$f" ] || [ -L "$f" ] && say library "${f##*/}"; done
done
if command -v ldconfig >/dev/null 2>&1; then
  ldconfig -p 2>/dev/null | while read -r name rest; do
    case $rest in *"=> /"*) say library "$name"; p=${rest##*=> }; say library "${p##*/}" ;; esac
  done
fi
for py in $pythons; do "$py" -I -B - 2>/dev/null <<'PY'
import os, site, sys

def say(kind, path):
    if path:
        print(kind, os.path.normpath(path))

version = "%d%d" % sys.version_info[:2]
for exe in (sys.executable, os.path.realpath(sys.executable)):
    here = os.path.dirname(exe)
    say("sealed", exe)
    # what would make this interpreter find another prefix, stdlib or path list
    for name in ("pyvenv.cfg", "pybuilddir.txt", "Modules", "Lib", "lib", "lib64",
                 os.path.basename(exe) + "._pth", "python" + version + "._pth"):
        say("sealed", os.path.join(here, name))
    say("sealed", os.path.join(os.path.dirname(here), "pyvenv.cfg"))
sites = set(getattr(site, "getsitepackages", lambda: [])())
sites.update(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")))
trees = [p for p in sys.path if p] + sorted(sites)
for p in sorted(sites):
    say("site", p)
for p in sys.path:
    if p and p not in sites:
        say("sealed", p)
inside = lambda q: any(q == t or q.startswith(t.rstrip("/") + "/") for t in trees)
modules = set()
for tree in trees:
    if not os.path.isdir(tree):
        continue
    for name in os.listdir(tree):
        module = name.split(".")[0] if name.endswith((".py", ".so", ".pyc", ".pyd")) else name
        if module.isidentifier():
            modules.add(module)
    for base, dirs, files in os.walk(tree):
        if "__pycache__" in dirs:
            dirs.remove("__pycache__")
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.islink(path) and not inside(os.path.realpath(path)):
                say("sealed", os.path.realpath(path))
for module in sorted(modules):
    print("module", module)
PY
done
true
