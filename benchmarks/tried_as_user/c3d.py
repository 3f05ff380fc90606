from torch import nn


class C3D(nn.Module):
    """C3D (Tran et al. 2015) for 16-frame 112x112 clips."""

    def __init__(self, classes=101):
        super().__init__()
        def conv(i, o):
            return [nn.Conv3d(i, o, 3, padding=1), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(
            *conv(3, 64), nn.MaxPool3d((1, 2, 2)),
            *conv(64, 128), nn.MaxPool3d(2),
            *conv(128, 256), *conv(256, 256), nn.MaxPool3d(2),
            *conv(256, 512), *conv(512, 512), nn.MaxPool3d(2),
            *conv(512, 512), *conv(512, 512), nn.MaxPool3d(2, padding=(0, 1, 1)))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8192, 4096), nn.ReLU(), nn.Dropout(0.5),
                                        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4096, classes))

    def forward(self, x):
        return self.classifier(self.features(x))
