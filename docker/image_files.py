"""docker/Dockerfile read without an engine, for docker/run_without_engine.py: its stages and
instructions, each target's files staged in a temp root (step 1), and the libraries, programs
and Python imports those files need from the target's packages (step 2); the release build's
training tools; the sidecar image's minimality."""
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# debian:12-slim is the Required-priority set plus apt: apt links libstdc++6 and libgcc-s1,
# and zlib1g is Required, so these libraries are in the base image without being installed.
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
# The base image's PATH; /usr/local/* is where the image's COPY put our binaries.
IMAGE_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
# The release build (scripts/build-release.sh): profile-guided, its training run is
# scripts/pgo-train.sh, whose TOOLS=(...) line names the programs it runs besides the build's.
RELEASE_SCRIPT = "scripts/build-release.sh"
TRAINING_SCRIPT = "scripts/pgo-train.sh"
RELEASE_FLAVOR = "release-pgo"          # what build-release.sh's ferry --version says


class CheckFailed(Exception):
    pass


def log(msg):
    print(f"[run_without_engine] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- Dockerfile

class Instruction:
    def __init__(self, line, keyword, text):
        self.line, self.keyword, self.text = line, keyword, text

    def where(self, dockerfile):
        return f"{os.path.relpath(dockerfile, REPO)}:{self.line}: {self.keyword} {self.text[:70]}"


def parse_dockerfile(path):
    """Stages: name -> list of Instruction (continuations joined, comments dropped)."""
    stages, current, pending, start = {}, None, "", 0
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#") or (not pending and not line.strip()):
                continue
            if not pending:
                start = n
            pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if line.endswith("\\"):
                continue
            keyword, _, text = pending.strip().partition(" ")
            pending = ""
            ins = Instruction(start, keyword.upper(), text.strip())
            if ins.keyword == "FROM":
                words = ins.text.split()
                current = words[2] if len(words) >= 3 and words[1].upper() == "AS" else words[0]
                stages[current] = []
            stages[current].append(ins)
    return stages


def shell_commands(ins):
    """The simple commands of a RUN line (split on &&), as word lists, env assignments dropped."""
    out = []
    for part in ins.text.split("&&"):
        words = shlex.split(part)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words.pop(0)
        if words:
            out.append(words)
    return out


def run_commands(stage, program):
    return [(ins, w) for ins in stage if ins.keyword == "RUN"
            for w in shell_commands(ins) if w[0] == program]


def apt_packages(stage):
    for ins, words in run_commands(stage, "apt-get"):
        if "install" in words:
            rest = words[words.index("install") + 1:]
            return {w for w in rest if not w.startswith("-")}
    return set()


def script_array(path, name):
    """The words of a bash array assignment `NAME=(a b c)` in the script at path."""
    with open(path) as f:
        m = re.search(rf"^{name}=\(([^)]*)\)", f.read(), re.M)
    if not m:
        raise CheckFailed(f"{os.path.relpath(path, REPO)}: no `{name}=(...)` line")
    return m.group(1).split()


def release_build(stage, dockerfile):
    """The build stage's run of scripts/build-release.sh [DIR]: (Instruction, DIR, the targets
    it builds, from the script's TARGETS=(...)), or None. The script configures DIR itself
    (`cmake -B DIR`, twice: instrumented, then with the profile)."""
    for ins in (i for i in stage if i.keyword == "RUN"):
        for words in shell_commands(ins):
            if words[0] in ("bash", "sh") and len(words) > 1:
                words = words[1:]
            if os.path.normpath(words[0]) != RELEASE_SCRIPT:
                continue
            script = os.path.join(REPO, RELEASE_SCRIPT)
            with open(script) as f:
                default = re.search(r"^BUILD_DIR=\$\{1:-([^}]+)\}", f.read(), re.M)
            args = [w for w in words[1:] if not w.startswith("-")]
            build_dir = args[0] if args else default.group(1)
            return ins, build_dir, set(script_array(script, "TARGETS"))
    return None


def build_outputs(stage, dockerfile, out_dir):
    """Paths (relative to the build dir) and names of what the build stage copies to out_dir,
    e.g. build/app/ferry -> ("app/ferry", "ferry"); checks each is a target
    the stage builds: by scripts/build-release.sh DIR (the release build) or by a `cmake
    --build DIR --target ...` in the same DIR."""
    build_dir, targets = None, set()
    release = release_build(stage, dockerfile)
    if release:
        build_dir, targets = release[1], set(release[2])
    for ins, words in run_commands(stage, "cmake"):
        if "-B" in words:
            build_dir = words[words.index("-B") + 1]
        if "--build" in words and build_dir is not None \
                and os.path.normpath(words[words.index("--build") + 1]) != \
                os.path.normpath(build_dir):
            raise CheckFailed(f"{ins.where(dockerfile)}: builds in "
                              f"{words[words.index('--build') + 1]}, not in the build dir "
                              f"{build_dir} the copied binaries come from")
        if "--target" in words:
            targets.update(w for w in words[words.index("--target") + 1:] if not w.startswith("-"))
    if build_dir is None:
        raise CheckFailed(f"{dockerfile}: no `cmake ... -B DIR` nor `{RELEASE_SCRIPT} DIR` in "
                          f"the build stage")
    for ins, words in run_commands(stage, "cp"):
        if words[-1].rstrip("/") != out_dir.rstrip("/"):
            continue
        outputs = []
        for src in (w for w in words[1:-1] if not w.startswith("-")):
            rel = os.path.relpath(src, build_dir)
            name = os.path.basename(src)
            if rel.startswith(".."):
                raise CheckFailed(f"{ins.where(dockerfile)}: {src} is not in the build dir "
                                  f"{build_dir}")
            if name not in targets:
                raise CheckFailed(f"{ins.where(dockerfile)}: {name} is copied but not built "
                                  f"(cmake --build --target lists {sorted(targets)})")
            outputs.append((rel, name))
        return ins, outputs
    raise CheckFailed(f"{dockerfile}: no `cp ... {out_dir}` in the build stage")


def dockerignored(rel, patterns):
    """Whether BuildKit leaves `rel` (or a folder above it) out of the context; the last
    matching pattern wins, `!` re-includes."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat.lstrip("!").strip("/")
        if any(fnmatch.fnmatchcase(p, pat) or fnmatch.fnmatchcase(p, pat.replace("**/", ""))
               for p in prefixes):
            ignored = not negate
    return ignored


def read_dockerignore(dockerfile):
    path = dockerfile + ".dockerignore"
    if not os.path.exists(path):
        path = os.path.join(REPO, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]


# ---------------------------------------------------------------- 1. the image's files

class Image:
    """A target's staged filesystem: its root, the instructions of its chain of stages (base
    first), the packages their apt-get lines install, the binaries COPY'd from other stages."""

    def __init__(self, target, root):
        self.target, self.root = target, root
        self.chain, self.packages, self.binaries = [], set(), []

    def last(self, keyword):
        """The instruction in force (the last CMD, HEALTHCHECK, USER along the chain)."""
        found = [i for i in self.chain if i.keyword == keyword]
        return found[-1] if found else None

    def cmd(self, keyword="CMD"):
        """The exec-form argv of the CMD (or HEALTHCHECK ... CMD) in force, or None."""
        ins = self.last(keyword)
        if ins is None:
            return None
        text = ins.text
        if keyword == "HEALTHCHECK":  # HEALTHCHECK [--options] CMD [...]
            text = text[text.index("CMD ") + 4:] if "CMD " in text else ""
        try:
            return json.loads(text)
        except ValueError:
            raise CheckFailed(f"{keyword} of target {self.target}: the exec form (a JSON list) "
                              f"is expected: {ins.text}")


def stage_chain(stages, target, dockerfile):
    """[stage names], base first, following FROM <stage>; the first must be FROM debian:12*."""
    if target not in stages:
        raise CheckFailed(f"{dockerfile}: no stage {target}")
    chain, name = [], target
    while name in stages:
        if name in chain:
            raise CheckFailed(f"{dockerfile}: FROM cycle at {name}")
        chain.insert(0, name)
        name = [w for w in stages[name][0].text.split() if not w.startswith("--")][0]
    if not name.startswith("debian:12"):
        raise CheckFailed(f"{dockerfile}: target {target} starts FROM {name}: this checker "
                          f"knows debian:12(-slim) only (BASE_IMAGE_PACKAGES)")
    return chain


def stage_image(dockerfile, stages, target, build, root):
    """Fills root like the target's filesystem; returns its Image."""
    image = Image(target, root)
    ignore = read_dockerignore(dockerfile)
    for name in stage_chain(stages, target, dockerfile):
        stage = stages[name]
        image.chain += stage
        image.packages |= apt_packages(stage)
        for _, words in run_commands(stage, "mkdir"):
            for d in (w for w in words[1:] if not w.startswith("-")):
                os.makedirs(root + d, exist_ok=True)
        for ins in (i for i in stage if i.keyword == "COPY"):
            words = shlex.split(ins.text)
            opts = {w.split("=", 1)[0]: w.split("=", 1)[-1] for w in words if w.startswith("--")}
            srcs, dest = [w for w in words if not w.startswith("--")][:-1], words[-1]
            if "--from" in opts:
                image.binaries += copy_from_stage(stages[opts["--from"]], srcs, dest, build,
                                                  root, dockerfile, ins)
            else:
                copy_from_context(srcs, dest, root, ignore, dockerfile, ins)
    return image


def copy_from_stage(stage, srcs, dest, build, root, dockerfile, copy_ins):
    staged = []
    for src in srcs:
        cp_ins, outputs = build_outputs(stage, dockerfile, src)
        for rel, name in outputs:
            path = os.path.join(build, rel)
            if not os.access(path, os.X_OK):
                raise CheckFailed(f"{cp_ins.where(dockerfile)}: {path} not built (build the "
                                  f"targets of that line in {build})")
            target = root + dest.rstrip("/") + "/" + name
            os.makedirs(os.path.dirname(target), exist_ok=True)
            staged.append(shutil.copy2(path, target))
    return staged


def copy_from_context(srcs, dest, root, ignore, dockerfile, ins):
    for src in srcs:
        matches = sorted(glob.glob(os.path.join(REPO, src)))
        if not matches:
            raise CheckFailed(f"{ins.where(dockerfile)}: {src} does not exist in the repository")
        for path in matches:
            rel = os.path.relpath(path, REPO)
            if dockerignored(rel, ignore):
                raise CheckFailed(f"{ins.where(dockerfile)}: {rel} is excluded by the "
                                  f".dockerignore, the build would not find it")
            target = root + (dest + os.path.basename(path) if dest.endswith("/") else dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)


# ---------------------------------------------------------------- 2. packages

_owners = {}


def package_of(path):
    """The Debian package that owns path (trying its /usr-merged twin), or None."""
    real = os.path.realpath(path)
    candidates = []
    for p in (path, real):
        candidates += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for p in candidates:
        if p not in _owners:
            out = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
            _owners[p] = out.stdout.split(":")[0].strip() if out.returncode == 0 else None
        if _owners[p]:
            return _owners[p]
    return None


def direct_dependencies(packages):
    """Depends and Pre-Depends of the installed packages (every alternative)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}\n", *packages],
                         capture_output=True, text=True)
    return {re.split(r"[ :(]", d.strip())[0] for d in re.split(r"[,|\n]", out.stdout) if d.strip()}


def check_libraries(binaries, allowed, root):
    """Returns the packages the binaries' libraries come from."""
    used = set()
    for b in binaries:
        out = subprocess.run(["ldd", b], capture_output=True, text=True)
        if out.returncode != 0:
            raise CheckFailed(f"ldd {b}: {out.stderr.strip()}")
        for line in out.stdout.splitlines():
            line = line.strip()
            if "not found" in line:
                raise CheckFailed(f"{os.path.relpath(b, root)}: {line}")
            m = re.match(r"^(?:\S+ => )?(/\S+) \(0x", line)
            if not m:
                continue  # linux-vdso
            pkg = package_of(m.group(1))
            if pkg is None:
                raise CheckFailed(f"{os.path.relpath(b, root)} loads {m.group(1)}, which no "
                                  f"Debian package installs: the image would not have it")
            if pkg not in allowed:
                raise CheckFailed(f"{os.path.relpath(b, root)} loads {m.group(1)} from package "
                                  f"{pkg}, which the runtime stage does not install (add it to "
                                  f"its apt-get install list)")
            used.add(pkg)
    return used


def image_which(program, root):
    """Where the image's PATH finds program: a staged file, or a host file that the image
    also has if its package is installed there."""
    for d in IMAGE_PATH:
        staged = root + d + "/" + program
        if os.access(staged, os.X_OK):
            return staged, None
        if not d.startswith("/usr/local") and os.access(os.path.join(d, program), os.X_OK):
            return os.path.join(d, program), package_of(os.path.join(d, program))
    return None, None


def check_programs(programs, allowed, root):
    """programs: (who, name). Those not staged must come from an installed package (or one its
    packages depend on: /usr/bin/python3 is python3-minimal's, which python3 pre-depends on)."""
    with_deps = allowed | direct_dependencies(sorted(allowed - BASE_IMAGE_PACKAGES))
    for who, program in programs:
        path, pkg = image_which(program, root)
        if path is None:
            raise CheckFailed(f"{who}: `{program}` is not in the image (not staged, not on "
                              f"this machine)")
        if path.startswith(root):
            continue
        if pkg not in with_deps:
            raise CheckFailed(f"{who}: `{program}` is {path} from package {pkg}, which the "
                              f"runtime stage does not install")


def check_python_imports(scripts, root=None):
    """-I -S: no site-packages, so the script must import with the staged files and the
    standard library alone (the image's python3 has nothing else)."""
    for s in scripts:
        out = subprocess.run(["/usr/bin/python3", "-I", "-S", s, "--help"], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["?"])[-1]
            raise CheckFailed(f"python3 {s} does not start in the image ({last}): "
                              f"what it imports must be COPY'd by the Dockerfile or be in the "
                              f"standard library")


def check_image(args, stages, target, root):
    """Steps 1 and 2 for one target's image alone; returns (Image, packages it has)."""
    image = stage_image(os.path.abspath(args.dockerfile), stages, target,
                        os.path.abspath(args.build), root)
    user = image.last("USER")
    if user is None or user.text.split(":")[0] in ("root", "0"):
        raise CheckFailed(f"target {target}: runs as root (no non-root USER)")
    log(f"1. target {target} staged in {root}: binaries "
        f"{' '.join(os.path.basename(b) for b in image.binaries) or 'none'}; packages "
        f"{' '.join(sorted(image.packages))}; USER {user.text}")
    allowed = image.packages | BASE_IMAGE_PACKAGES
    used = check_libraries(image.binaries, allowed, root)
    unused = sorted(p for p in image.packages - used if p.startswith("lib"))
    if unused:  # not an error (a library may be dlopen'ed), but worth a look
        log(f"note: target {target} installs, and no binary loads: {' '.join(unused)}")
    return image, allowed


def check_release_build(stages, dockerfile):
    """When a stage runs scripts/build-release.sh, the training it runs (scripts/pgo-train.sh)
    must find its tools there: every program of the training script's TOOLS=(...) comes from a
    package that stage installs (or debian:12 has), and both scripts are in the build context.
    Returns the stage's name, or None when no stage runs it (the plain build)."""
    ignore = read_dockerignore(dockerfile)
    for name, stage in stages.items():
        release = release_build(stage, dockerfile)
        if release is None:
            continue
        ins, build_dir, targets = release
        for script in (RELEASE_SCRIPT, TRAINING_SCRIPT):
            if dockerignored(script, ignore):
                raise CheckFailed(f"{ins.where(dockerfile)}: {script} is excluded by the "
                                  f".dockerignore, the build would not find it")
        packages = apt_packages(stage)
        with_deps = packages | BASE_IMAGE_PACKAGES | direct_dependencies(sorted(packages))
        found = []
        for tool in script_array(os.path.join(REPO, TRAINING_SCRIPT), "TOOLS"):
            path = shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin")
            if path is None:
                raise CheckFailed(f"{TRAINING_SCRIPT} runs `{tool}`, which this machine lacks: "
                                  f"cannot tell which package the {name} stage needs for it")
            pkg = package_of(path)
            if pkg not in with_deps:
                raise CheckFailed(f"{ins.where(dockerfile)}: the release build's training "
                                  f"({TRAINING_SCRIPT}) runs `{tool}` ({path}, package {pkg}), "
                                  f"which stage {name} does not install")
            found.append(f"{tool} ({pkg})")
        log(f"1. stage {name}: the release build ({RELEASE_SCRIPT} {build_dir}: "
            f"{' '.join(sorted(targets))}); its training's tools {', '.join(found)} installed "
            f"there")
        return name
    return None


def ferry_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def check_sidecar(image, allowed):
    """The default target is what a sidecar deployment pulls: ferry and its libraries only,
    and a HEALTHCHECK that runs in it."""
    names = sorted(os.path.basename(b) for b in image.binaries)
    if names != ["ferry"]:
        raise CheckFailed(f"default target {image.target}: binaries {names}, expected ferry only")
    used = check_libraries(image.binaries, allowed, image.root)
    extra = sorted(image.packages - used)
    if extra:
        raise CheckFailed(f"default target {image.target}: installs {' '.join(extra)}, which "
                          f"ferry does not load (the sidecar image has ferry and its libraries)")
    cmd, hc = image.cmd(), image.cmd("HEALTHCHECK")
    if not cmd or cmd[0] != "ferry":
        raise CheckFailed(f"default target {image.target}: CMD {cmd} does not run ferry")
    if not hc:
        raise CheckFailed(f"default target {image.target}: no HEALTHCHECK CMD")
    check_programs([("HEALTHCHECK", hc[0]), ("CMD", cmd[0])], allowed, image.root)
    log(f"2. default target {image.target}: ferry and the libraries it loads only; "
        f"HEALTHCHECK {shlex.join(hc)}; staged: {ferry_version(image.binaries[0])}")
