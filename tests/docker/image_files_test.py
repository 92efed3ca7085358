#!/usr/bin/python3
"""Unit tests of the Docker checker's reading of the Dockerfile's build stage
(docker/image_files.py, step 1 of docker/run_without_engine.py): the release build
(scripts/build-release.sh DIR) and its training's tools (scripts/pgo-train.sh's TOOLS=(...)), on
the real Dockerfile and on altered copies of it. No engine, no build tree: only the Dockerfile,
the two scripts and dpkg. The checker's end-to-end run is the ctest
docker_compose_without_engine."""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "docker"))
import image_files  # noqa: E402
image_files.log = lambda msg: None  # quiet

DOCKERFILE = os.path.join(REPO, "docker", "Dockerfile")


class ReleaseBuildStage(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rwe-test-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def variant(self, old, new):
        """The Dockerfile's stages with `old` replaced by `new` (which must occur)."""
        with open(DOCKERFILE) as f:
            text = f.read()
        self.assertIn(old, text)
        path = os.path.join(self.dir, "Dockerfile")
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return path, image_files.parse_dockerfile(path)

    def test_the_image_builds_ferry_with_the_release_script(self):
        stages = image_files.parse_dockerfile(DOCKERFILE)
        self.assertEqual(image_files.check_release_build(stages, DOCKERFILE), "build")
        _, build_dir, targets = image_files.release_build(stages["build"], DOCKERFILE)
        self.assertEqual(build_dir, "build")
        self.assertIn("ferry", targets)
        _, outputs = image_files.build_outputs(stages["build"], DOCKERFILE, "/out/ferry/")
        self.assertEqual(outputs, [("app/ferry", "ferry")])
        _, outputs = image_files.build_outputs(stages["build"], DOCKERFILE, "/out/bench/")
        self.assertEqual(sorted(n for _, n in outputs),
                         ["cell-delay-relay", "cell-loadgen", "streams-emulator"])

    def test_training_tools_must_be_installed_in_the_build_stage(self):
        path, stages = self.variant("nghttp2-client curl", "curl")
        with self.assertRaisesRegex(image_files.CheckFailed, "runs `h2load`.*nghttp2-client"):
            image_files.check_release_build(stages, path)
        path, stages = self.variant("nghttp2-client curl", "nghttp2-client")
        with self.assertRaisesRegex(image_files.CheckFailed, "runs `curl`"):
            image_files.check_release_build(stages, path)

    def test_the_default_build_dir_is_the_scripts(self):
        path, stages = self.variant("scripts/build-release.sh build",
                                    "bash scripts/build-release.sh")
        self.assertEqual(image_files.release_build(stages["build"], path)[1], "build-release")
        # The cp lines name build/, which is not the release tree build-release/.
        with self.assertRaisesRegex(image_files.CheckFailed, "builds in build, not in the build dir "
                                                     "build-release"):
            image_files.build_outputs(stages["build"], path, "/out/ferry/")

    def test_a_binary_copied_but_not_built_fails(self):
        path, stages = self.variant("--target cell-loadgen cell-delay-relay",
                                    "--target cell-loadgen")
        with self.assertRaisesRegex(image_files.CheckFailed, "cell-delay-relay is copied but not built"):
            image_files.build_outputs(stages["build"], path, "/out/bench/")

    def test_the_plain_build_is_still_understood(self):
        path, stages = self.variant(
            "scripts/build-release.sh build \\\n && cmake --build build",
            "cmake -S . -B build -G Ninja \\\n && cmake --build build --target ferry streams-emulator")
        self.assertIsNone(image_files.check_release_build(stages, path))
        _, outputs = image_files.build_outputs(stages["build"], path, "/out/ferry/")
        self.assertEqual(outputs, [("app/ferry", "ferry")])


if __name__ == "__main__":
    unittest.main()
