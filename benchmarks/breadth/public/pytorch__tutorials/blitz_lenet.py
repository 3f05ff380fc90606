# Origin: https://github.com/pytorch/tutorials
#   file: beginner_source/blitz/neural_networks_tutorial.py
#   commit: 06dc97785c47755b8d5bca167ad3cfc2ee8a04c1
#   url: https://github.com/pytorch/tutorials/blob/06dc97785c47755b8d5bca167ad3cfc2ee8a04c1/beginner_source/blitz/neural_networks_tutorial.py
# Licence: BSD-3-Clause (full text in ./LICENSE, copied from the repository, LICENSE at commit c53e7d4efc0e39e455c531d21ec7db28ba220214)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - kept the imports and the Net class (LeNet-style, per the tutorial's own comment); removed the tutorial text and the loss/backprop/optimizer demonstration code
# --------------------------------------------------------------------------------------------------
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):

    def __init__(self):
        super(Net, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square convolution
        # kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        # an affine operation: y = Wx + b
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        # Max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # If the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

    def num_flat_features(self, x):
        size = x.size()[1:]  # all dimensions except the batch dimension
        num_features = 1
        for s in size:
            num_features *= s
        return num_features
