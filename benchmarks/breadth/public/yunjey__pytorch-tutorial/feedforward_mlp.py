# Origin: https://github.com/yunjey/pytorch-tutorial
#   file: tutorials/01-basics/feedforward_neural_network/main.py
#   commit: 0500d3df5a2a8080ccfccbc00aca0eacc21818db
#   url: https://github.com/yunjey/pytorch-tutorial/blob/0500d3df5a2a8080ccfccbc00aca0eacc21818db/tutorials/01-basics/feedforward_neural_network/main.py
# Licence: MIT (full text in ./LICENSE, copied from the repository)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - kept only the NeuralNet class, the torch imports and the module-level `device` line (used inside forward)
#   - removed torchvision imports, hyper-parameter globals, dataset/data loaders, training and test loops
# --------------------------------------------------------------------------------------------------
import torch
import torch.nn as nn


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super(NeuralNet, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size) 
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden_size, num_classes)  
    
    def forward(self, x):
        out = self.fc1(x)
        out = self.relu(out)
        out = self.fc2(out)
        return out
