"""Region options from Python: a regions file never passes silently. An image
call refuses one (no frame index or pts there); process_video warns, with the
numbers, about a file that cannot match the video, and with
strict_regions=True fails without writing the output; a file that fits blurs
inside its boxes and leaves the rest bit for bit."""

import numpy as np
import pytest

import streamblur
from support import write_test_clip

W, H, FRAMES, FPS = 64, 48, 10, 30


@pytest.fixture
def clip(tmp_path):
    src = tmp_path / "in.mkv"
    write_test_clip(src, width=W, height=H, frames=FRAMES, fps=FPS, noise=True)
    return src


def regions(tmp_path, text, name="faces.jsonl"):
    path = tmp_path / name
    path.write_text(text)
    return path


def lumas(path):
    return [np.array(f.planes[0]).astype(np.int32) for f in streamblur.frames(path, device="cpu")]


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


def test_chain_with_a_regions_file_refuses_an_image(tmp_path):
    path = regions(tmp_path, '{"frame": 0, "boxes": [[0, 0, 32, 24]]}\n')
    img = np.random.default_rng(1).integers(0, 256, (48, 64), dtype=np.uint8)
    chain = streamblur.Chain(f"gblur=sigma=2:regions={path}")
    with pytest.raises(ValueError) as e:
        chain(img, backend="cpu")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"gblur: regions=FILE cannot apply here: regions file '{path}' needs video frames with "
                          "timestamps (a frame index or pts)"), msg
    assert "--" not in msg  # the library's words, not the CLI's flags
    # box= needs no timestamp: it applies, inside the box only.
    out = streamblur.Chain("gblur=sigma=2:box=0:0:32:24")(img, backend="cpu")
    assert not np.array_equal(out[:24, :32], img[:24, :32])
    assert np.array_equal(out[:, 40:], img[:, 40:]) and np.array_equal(out[30:], img[30:])


def test_chain_with_a_regions_file_refuses_an_image_on_the_gpu(tmp_path, gpu):
    path = regions(tmp_path, '{"pts": 0, "boxes": [[0, 0, 32, 24]]}\n')
    img = np.zeros((48, 64), dtype=np.uint8)
    with pytest.raises(ValueError, match="needs video frames with timestamps"):
        streamblur.Chain(f"boxblur=2:regions={path}")(img, backend="cuda")


# (file, the warning's text after "does not fit this video: ")
NEVER_MATCH = [
    ('{"frame": 0, "boxes": []}\n{"frame": 9, "boxes": []}\n',
     "none of its 2 keyframes has a box, so it blurs nothing"),
    ('{"frame": 40, "boxes": [[8, 8, 16, 16]]}\n{"frame": 90, "boxes": [[8, 8, 16, 16]]}\n',
     "its boxes lie on frames 40 to 90 (lines 1 to 2), but the video has 10 frames (0 to 9)"),
    ('{"pts": 0, "boxes": [[8, 8, 16, 16]]}\n{"pts": 150, "boxes": [[8, 8, 16, 16]]}\n'
     '{"pts": 300, "boxes": [[8, 8, 16, 16]]}\n',
     "they look like milliseconds (300 ms is 0.3 s)"),
    ('{"pts": 0, "boxes": [[8, 8, 16, 16]]}\n{"pts": 9, "boxes": [[8, 8, 16, 16]]}\n',
     "they look like frame numbers (frame 9 at 30 fps is at 0.3 s)"),
    ('{"frame": 0, "boxes": [[0.25, 0.25, 0.2, 0.2]]}\n{"frame": 9, "boxes": [[0.3, 0.3, 0.2, 0.2]]}\n',
     "none of its 2 boxes reaches a pixel of the 64x48 picture"),
]


@pytest.mark.parametrize("text, why", NEVER_MATCH, ids=["no-boxes", "frames-past-end", "ms", "frame-numbers",
                                                        "fractions"])
def test_process_video_warns_about_a_file_that_cannot_match(clip, tmp_path, capfd, text, why):
    path = regions(tmp_path, text)
    out = tmp_path / "out.mkv"
    stats = streamblur.process_video(clip, out, vf=f"gblur=sigma=4:regions={path}", codec="ffv1", backend="cpu")
    assert stats["frames"] == FRAMES and out.exists()
    [warning] = warnings_in(capfd.readouterr().err)
    assert warning.startswith(f"warning: regions file '{path}' does not fit this video: "), warning
    assert why in warning


@pytest.mark.parametrize("text, why", NEVER_MATCH, ids=["no-boxes", "frames-past-end", "ms", "frame-numbers",
                                                        "fractions"])
def test_strict_regions_fails_and_writes_nothing(clip, tmp_path, capfd, text, why):
    path = regions(tmp_path, text)
    out = tmp_path / "out.mkv"
    with pytest.raises(ValueError) as e:
        streamblur.process_video(clip, out, vf=f"gblur=sigma=4:regions={path}", codec="ffv1", backend="cpu",
                                 strict_regions=True)
    assert str(e.value).startswith(f"regions file '{path}' does not fit this video: ")
    assert why in str(e.value) and str(e.value).endswith("; no output written")
    assert not out.exists()
    assert warnings_in(capfd.readouterr().err) == []


def test_no_box_touching_a_frame_is_said_at_the_end(clip, tmp_path, capfd):
    # Frame 10 of a 10-frame clip: within the margin the frame count's estimate
    # gets before the run, caught by the run's own count at its end.
    path = regions(tmp_path, '{"frame": 10, "boxes": [[8, 8, 16, 16]]}\n')
    vf = f"gblur=sigma=4:regions={path}"
    said = (f"regions file '{path}': no box touched any of the 10 frames (frames 0 to 9); "
            "its boxes lie on frames 10 to 10 (line 1)")
    out = tmp_path / "out.mkv"
    streamblur.process_video(clip, out, vf=vf, codec="ffv1", backend="cpu")
    assert warnings_in(capfd.readouterr().err) == ["warning: " + said]
    assert out.exists()
    strict_out = tmp_path / "strict.mkv"
    with pytest.raises(ValueError) as e:
        streamblur.process_video(clip, strict_out, vf=vf, codec="ffv1", backend="cpu", strict_regions=True)
    assert str(e.value) == said + "; no output written"
    assert not strict_out.exists()


def test_a_file_that_fits_blurs_its_boxes_and_says_nothing(clip, tmp_path, capfd):
    # A 16x16 box moving 4 pixels right a frame, keyframes on frames 0 and 9.
    path = regions(tmp_path, '{"frame": 0, "boxes": [[4, 8, 16, 16]]}\n{"frame": 9, "boxes": [[40, 8, 16, 16]]}\n')
    out = tmp_path / "out.mkv"
    streamblur.process_video(clip, out, vf=f"gblur=sigma=4:regions={path}", codec="ffv1", backend="cpu",
                             strict_regions=True)
    assert warnings_in(capfd.readouterr().err) == []
    before, after = lumas(clip), lumas(out)
    assert len(after) == FRAMES
    for i, (a, b) in enumerate(zip(before, after)):
        x = 4 + 4 * i
        inside = np.zeros(a.shape, dtype=bool)
        inside[8:24, x:x + 16] = True
        assert np.abs(b - a)[inside].mean() > 2, f"frame {i}: the box was not blurred"
        assert np.array_equal(b[~inside], a[~inside]), f"frame {i}: pixels outside the box changed"
